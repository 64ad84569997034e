"""The ``trace_edit_labels`` table: labels of the trace taxonomy judge, keyed by (judge model,
rubric version, diff hash), so labelling a run again with the same judge costs no LLM call."""

from __future__ import annotations

import json
import time

from cambrian.store.database import Database

CachedLabels = tuple[tuple[str, ...], str]  # (labels, rationale)
_QUERY_CHUNK = 500


class EditLabels:
    def __init__(self, db: Database) -> None:
        self._db = db

    def get_many(self, judge: str, rubric: str, digests: list[str]) -> dict[str, CachedLabels]:
        found: dict[str, CachedLabels] = {}
        unique = sorted(set(digests))
        for start in range(0, len(unique), _QUERY_CHUNK):
            chunk = unique[start:start + _QUERY_CHUNK]
            rows = self._db.execute(
                "SELECT diff_sha256, labels_json, rationale FROM trace_edit_labels WHERE judge=? "
                f"AND rubric=? AND diff_sha256 IN ({','.join('?' * len(chunk))})",
                (judge, rubric, *chunk))
            for digest, labels, rationale in rows:
                found[digest] = (tuple(json.loads(labels)), rationale)
        return found

    def put_many(self, judge: str, rubric: str, entries: dict[str, CachedLabels]) -> None:
        now = time.time()
        with self._db.transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO trace_edit_labels(judge, rubric, diff_sha256, labels_json, "
                "rationale, created_at) VALUES (?,?,?,?,?,?)",
                [(judge, rubric, digest, json.dumps(list(labels)), rationale, now)
                 for digest, (labels, rationale) in entries.items()])

    def judges(self) -> list[tuple[str, str, int]]:
        """(judge, rubric, cached diffs) for every judge that labelled something here."""
        rows = self._db.execute(
            "SELECT judge, rubric, COUNT(*) FROM trace_edit_labels GROUP BY judge, rubric "
            "ORDER BY judge, rubric")
        return [(j, r, int(n)) for j, r, n in rows]
