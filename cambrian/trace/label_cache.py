"""Cache of judge labels, keyed by (judge model, rubric version, diff hash).

Where it lives: in a Cambrian run directory, a table ``trace_edit_labels`` inside the run store
(``run.sqlite``), created by this module with ``CREATE TABLE IF NOT EXISTS`` (the store schema
itself is untouched, and a run that was never labelled has no such table). For any other trace
location (an exported folder, a ShinkaEvolve or OpenEvolve output) the same table lives in a
sidecar file ``<location>/trace/labels.sqlite``, so foreign traces are never written into.

Labelling a run again with the same judge costs no LLM calls; labelling it under another judge
reuses nothing but also re-runs nothing of the search.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Self

from cambrian.store.store import STORE_FILENAME

SIDECAR_DIR = "trace"
SIDECAR_FILE = "labels.sqlite"

_DDL = """
CREATE TABLE IF NOT EXISTS trace_edit_labels (
    judge        TEXT NOT NULL,
    rubric       TEXT NOT NULL,
    diff_sha256  TEXT NOT NULL,
    labels_json  TEXT NOT NULL,
    rationale    TEXT NOT NULL,
    created_at   REAL NOT NULL,
    PRIMARY KEY (judge, rubric, diff_sha256)
)
"""

CachedLabels = tuple[tuple[str, ...], str]  # (labels, rationale)


def cache_path(location: Path) -> Path:
    """The SQLite file holding the cache for a run dir, a run.sqlite, or any trace folder."""
    location = Path(location)
    if location.name == STORE_FILENAME:
        return location
    if (location / STORE_FILENAME).exists():
        return location / STORE_FILENAME
    folder = location if location.is_dir() else location.parent
    return folder / SIDECAR_DIR / SIDECAR_FILE


class LabelCache:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_DDL)

    @classmethod
    def for_location(cls, location: str | Path) -> LabelCache:
        return cls(cache_path(Path(location)))

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_many(self, judge: str, rubric: str, digests: list[str]) -> dict[str, CachedLabels]:
        found: dict[str, CachedLabels] = {}
        unique = sorted(set(digests))
        for start in range(0, len(unique), 500):  # stay below SQLite's bound-parameter limit
            chunk = unique[start:start + 500]
            rows = self._db.execute(
                "SELECT diff_sha256, labels_json, rationale FROM trace_edit_labels WHERE judge=? "
                f"AND rubric=? AND diff_sha256 IN ({','.join('?' * len(chunk))})",
                (judge, rubric, *chunk),
            )
            for digest, labels, rationale in rows:
                found[digest] = (tuple(json.loads(labels)), rationale)
        return found

    def put_many(self, judge: str, rubric: str, entries: dict[str, CachedLabels]) -> None:
        now = time.time()
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(
                "INSERT OR REPLACE INTO trace_edit_labels(judge, rubric, diff_sha256, labels_json, "
                "rationale, created_at) VALUES (?,?,?,?,?,?)",
                [(judge, rubric, digest, json.dumps(list(labels)), rationale, now)
                 for digest, (labels, rationale) in entries.items()],
            )
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def judges(self) -> list[tuple[str, str, int]]:
        """(judge, rubric, cached diffs) for every judge that labelled something here."""
        rows = self._db.execute(
            "SELECT judge, rubric, COUNT(*) FROM trace_edit_labels GROUP BY judge, rubric "
            "ORDER BY judge, rubric")
        return [(j, r, int(n)) for j, r, n in rows]
