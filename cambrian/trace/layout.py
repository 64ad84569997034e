"""On-disk layout of an exported trace folder (seed 001 §3.2, Appendix A.1).

::

    meta.json                 format name, schema version, row counts
    runs.jsonl                one row per run
    candidates.jsonl          source referenced by ``source_sha256``; a program of several files
                              by ``files`` ([{path, sha256}], schema 2), each text a blob
    evaluations.jsonl
    edges.jsonl
    contexts.jsonl            message texts by ``content_sha256``, reply by ``response_sha256``
    environments.jsonl
    blobs/<sha[:2]>/<sha>     UTF-8 bytes of each distinct program, prompt or reply text

Every JSONL row is ``json.dumps(row, sort_keys=True, ensure_ascii=False)``, so exporting the same
trace twice yields byte-identical files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORMAT = "evotrace-jsonl"
SCHEMA_VERSION = 2  # the newest written and read
# A trace without programs of several files is written as schema 1, which older readers read.
ONE_FILE_SCHEMA_VERSION = 1
META_FILE = "meta.json"
BLOB_DIR = "blobs"
TABLES = ("runs", "candidates", "evaluations", "edges", "contexts", "environments")


def table_path(root: Path, table: str) -> Path:
    return root / f"{table}.jsonl"


def blob_path(root: Path, digest: str) -> Path:
    return root / BLOB_DIR / digest[:2] / digest


def dumps_row(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False, allow_nan=False)
