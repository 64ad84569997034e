"""Read an exported trace folder (see :mod:`cambrian.trace.layout`) back into memory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cambrian.task.program_files import bundle_of
from cambrian.trace.layout import FORMAT, META_FILE, SCHEMA_VERSION, blob_path, table_path
from cambrian.trace.model import (
    CandidateRecord,
    ContextRecord,
    EdgeRecord,
    EnvironmentRecord,
    EvaluationRecord,
    RunRecord,
    Trace,
    sha256_text,
)


class TraceFormatError(ValueError):
    """The folder is not a readable exported trace (wrong version, missing blob...)."""


class _BlobReader:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, str] = {}

    def get(self, digest: str | None) -> str | None:
        if digest is None:
            return None
        if digest not in self._cache:
            path = blob_path(self.root, digest)
            if not path.exists():
                raise TraceFormatError(f"missing blob {digest} in {self.root}")
            text = path.read_bytes().decode("utf-8")
            if sha256_text(text) != digest:
                raise TraceFormatError(f"blob {path} does not match its sha256")
            self._cache[digest] = text
        return self._cache[digest]


def _rows(root: Path, table: str) -> Iterator[dict[str, Any]]:
    path = table_path(root, table)
    if not path.exists():
        return
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def read_meta(root: Path) -> dict[str, Any]:
    meta = json.loads((root / META_FILE).read_text(encoding="utf-8"))
    if meta.get("format") != FORMAT:
        raise TraceFormatError(f"{root} is not an {FORMAT} export (format={meta.get('format')!r})")
    if int(meta.get("schema_version", -1)) > SCHEMA_VERSION:
        raise TraceFormatError(
            f"{root} uses trace schema {meta['schema_version']}; this Cambrian reads up to "
            f"{SCHEMA_VERSION}"
        )
    return meta


def _bundle(blobs: _BlobReader, files: list[dict[str, str]], digest: str | None) -> str:
    """The program text of a candidate exported as its files."""
    source = bundle_of((f["path"], blobs.get(f["sha256"]) or "") for f in files)
    if digest is not None and sha256_text(source) != digest:
        raise TraceFormatError(f"the files of a candidate do not make its program {digest}")
    return source


def read_exported_trace(path: str | Path) -> Trace:
    root = Path(path)
    read_meta(root)
    blobs = _BlobReader(root)
    runs = [RunRecord(**row) for row in _rows(root, "runs")]
    if len(runs) != 1:
        raise TraceFormatError(f"{root} holds {len(runs)} runs; a trace folder holds exactly one")
    candidates = []
    for row in _rows(root, "candidates"):
        digest, files = row.pop("source_sha256"), row.pop("files", None)
        row["source"] = blobs.get(digest) if files is None else _bundle(blobs, files, digest)
        candidates.append(CandidateRecord(**row))
    contexts = []
    for row in _rows(root, "contexts"):
        messages = []
        for message in row.pop("messages"):
            entry = {k: v for k, v in message.items() if k != "content_sha256"}
            entry["content"] = blobs.get(message["content_sha256"]) or ""
            messages.append(entry)
        row["messages"] = messages
        row["response_text"] = blobs.get(row.pop("response_sha256"))
        contexts.append(ContextRecord(**row))
    return Trace(
        run=runs[0],
        candidates=candidates,
        evaluations=[EvaluationRecord(**row) for row in _rows(root, "evaluations")],
        edges=[EdgeRecord(**row) for row in _rows(root, "edges")],
        contexts=contexts,
        environments=[EnvironmentRecord(**row) for row in _rows(root, "environments")],
        origin=root,
    )
