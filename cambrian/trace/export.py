"""Write a trace as EvoTrace-style JSONL tables plus content-addressed text blobs."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cambrian.task.program_files import is_bundle, split_files
from cambrian.trace.layout import (
    FORMAT,
    META_FILE,
    ONE_FILE_SCHEMA_VERSION,
    SCHEMA_VERSION,
    blob_path,
    dumps_row,
    table_path,
)
from cambrian.trace.loading import load_trace
from cambrian.trace.model import CandidateRecord, ContextRecord, Trace, sha256_text


class _BlobWriter:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.digests: set[str] = set()
        self._folders: set[Path] = set()

    def put(self, text: str) -> str:
        digest = sha256_text(text)
        if digest not in self.digests:
            self.digests.add(digest)
            path = blob_path(self.root, digest)
            if path.parent not in self._folders:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._folders.add(path.parent)
            if not path.exists():
                tmp = path.with_name(path.name + ".tmp")
                tmp.write_bytes(text.encode("utf-8"))
                os.replace(tmp, path)
        return digest


def _candidate_row(candidate: CandidateRecord, blobs: _BlobWriter) -> dict[str, Any]:
    """A candidate's row; a program of several files names each file's blob (a text shared
    by many candidates is written once), its ``source_sha256`` the hash of the whole."""
    row = asdict(candidate)
    source = row.pop("source")
    if source is not None and is_bundle(source):
        row["source_sha256"] = sha256_text(source)
        row["files"] = [{"path": f.path, "sha256": blobs.put(f.text)}
                        for f in split_files(source)]
    else:
        row["source_sha256"] = blobs.put(source) if source is not None else None
    return row


def _context_row(context: ContextRecord, blobs: _BlobWriter) -> dict[str, Any]:
    row = asdict(context)
    messages = []
    for message in row.pop("messages"):
        entry = {k: v for k, v in message.items() if k != "content"}
        entry["content_sha256"] = blobs.put(message.get("content") or "")
        messages.append(entry)
    row["messages"] = messages
    response = row.pop("response_text")
    row["response_sha256"] = blobs.put(response) if response is not None else None
    return row


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(dumps_row(row))
            handle.write("\n")
    os.replace(tmp, path)


def export_trace(source: Trace | str | Path, out_dir: str | Path) -> Path:
    """Export a run (a run dir, any readable trace location, or an in-memory trace) to
    ``out_dir``; returns ``out_dir``. Re-exporting into the same folder overwrites the tables."""
    trace = source if isinstance(source, Trace) else load_trace(source)
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    blobs = _BlobWriter(root)
    tables: dict[str, list[dict[str, Any]]] = {
        "runs": [asdict(trace.run)],
        "candidates": [_candidate_row(c, blobs) for c in trace.candidates],
        "evaluations": [asdict(e) for e in trace.evaluations],
        "edges": [asdict(e) for e in trace.edges],
        "contexts": [_context_row(c, blobs) for c in trace.contexts],
        "environments": [asdict(e) for e in trace.environments],
    }
    for name, rows in tables.items():
        _write_jsonl(table_path(root, name), rows)
    meta = {
        "format": FORMAT,
        "schema_version": (SCHEMA_VERSION if any("files" in row for row in tables["candidates"])
                           else ONE_FILE_SCHEMA_VERSION),
        "producer": "cambrian",
        "framework": trace.run.framework,
        "counts": {name: len(rows) for name, rows in tables.items()},
        "blobs": len(blobs.digests),
    }
    (root / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n",
                                  encoding="utf-8")
    return root
