"""The rows the web UI's column read models are made of (``cambrian/search/ui_columns.py``):
each candidate's lean fields, each evaluation row's times and status, after a watermark. One
query each, no program text read back (a program's line count is counted by SQLite)."""

from __future__ import annotations

from typing import Any

from cambrian.store.browse import REASON_CHARS
from cambrian.store.database import Database

FAILED_SQL = "('incorrect', 'patch_failed', 'rejected', 'screened', 'duplicate')"


class ColumnRows:
    def __init__(self, db: Database) -> None:
        self._db = db

    def candidates(self, after: int) -> list[tuple[Any, ...]]:
        """Candidates with ids after ``after``, in id order: id, parent id, island, status,
        score, model, notes' intent, operator, generation, whether it has a source hash,
        whether it has a program, its lines, the start of a failed one's error, and a correct
        one's last evaluation's public metrics (JSON)."""
        return self._db.execute(
            "SELECT c.id, c.parent_id, c.island, c.status, c.score, c.model, "
            "json_extract(c.notes_json, '$.intent'), c.operator, c.generation, "
            "c.source_hash IS NOT NULL, c.source IS NOT NULL OR c.source_hash IS NOT NULL, "
            "COALESCE(length(c.source) - length(replace(c.source, char(10), '')) + 1, "
            "(SELECT SUM(length(b.text) - length(replace(b.text, char(10), '')) + 1) "
            "FROM candidate_files f JOIN blobs b ON b.sha256 = f.sha256 "
            "WHERE f.candidate_id = c.id)), "
            f"CASE WHEN c.status IN {FAILED_SQL} THEN substr(c.error, 1, ?) END, "
            "CASE WHEN c.status = 'correct' THEN (SELECT e.public_json FROM evaluations e "
            "WHERE e.candidate_id = c.id ORDER BY e.id DESC LIMIT 1) END "
            "FROM candidates c WHERE c.id > ? ORDER BY c.id",
            (REASON_CHARS, after)).fetchall()

    def evaluations(self, after_candidate: int, after_id: int) -> list[tuple[Any, ...]]:
        """Evaluation rows after evaluation ``after_id`` or of a candidate after
        ``after_candidate``, in id order: id, candidate id, created at, duration, status,
        whether it is the main stage."""
        return self._db.execute(
            "SELECT id, candidate_id, created_at, duration_s, status, stage = 'main' "
            "FROM evaluations WHERE id > ? OR candidate_id > ? ORDER BY id",
            (after_id, after_candidate)).fetchall()

    def pending_through(self, candidate: int) -> int:
        """How many candidates up to ``candidate`` are pending."""
        return int(self._db.one("SELECT COUNT(*) FROM candidates WHERE status = 'pending' "
                                "AND id <= ?", (candidate,)))

    def samples(self, candidates: list[int], evaluations: list[int], calls: list[int],
                ) -> tuple[list[list[Any]], list[list[Any]], list[list[Any]]]:
        """Rows a checkpoint of the columns is checked against, by id: each candidate's id,
        status, score and parent; each evaluation row's id and candidate; each LLM call's id,
        time and model."""
        def rows(sql: str, ids: list[int]) -> list[list[Any]]:
            if not ids:
                return []
            return [list(row) for row in self._db.execute(
                sql.format(",".join("?" * len(ids))), ids)]

        return (rows("SELECT id, status, score, parent_id FROM candidates WHERE id IN ({}) "
                     "ORDER BY id", candidates),
                rows("SELECT id, candidate_id FROM evaluations WHERE id IN ({}) ORDER BY id",
                     evaluations),
                rows("SELECT id, created_at, model FROM contexts WHERE id IN ({}) ORDER BY id",
                     calls))

