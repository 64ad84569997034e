"""The ``evaluations`` table: one row per evaluation stage of a candidate (``main`` last)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from cambrian.core.evaluation import EvaluationResult
from cambrian.store.codec import finite_or_none, loads
from cambrian.store.database import Database

_RESULT_COLUMNS = ("status, combined_score, public_json, private_json, text_feedback, error, "
                   "stdout, stderr, duration_s, extra_json")
_QUERY_CHUNK = 500


def _result(row: Sequence[Any]) -> EvaluationResult:
    return EvaluationResult(
        status=row[0], combined_score=row[1], public=loads(row[2], {}), private=loads(row[3], {}),
        text_feedback=row[4], error=row[5], stdout=row[6], stderr=row[7], duration_s=row[8],
        extra=loads(row[9], {}))


class Evaluations:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, candidate_id: int, result: EvaluationResult, stage: str = "main",
            worker: str = "local") -> int:
        codec = self._db.codec
        cursor = self._db.execute(
            "INSERT INTO evaluations(candidate_id, stage, status, combined_score, public_json, "
            "private_json, text_feedback, error, stdout, stderr, duration_s, extra_json, "
            "created_at, worker) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (candidate_id, stage, result.status, finite_or_none(result.combined_score),
             codec.json(result.public), codec.json(result.private),
             codec.text(result.text_feedback), codec.text(result.error), codec.text(result.stdout),
             codec.text(result.stderr), result.duration_s, codec.json(result.extra), time.time(),
             worker),
        )
        return int(cursor.lastrowid or 0)

    def latest(self, candidate_id: int, stage: str | None = None) -> EvaluationResult | None:
        """The candidate's last evaluation row (of ``stage``, when given)."""
        sql = f"SELECT {_RESULT_COLUMNS} FROM evaluations WHERE candidate_id=?"
        params: tuple[Any, ...] = (candidate_id,)
        if stage is not None:
            sql += " AND stage=?"
            params += (stage,)
        row = self._db.execute(sql + " ORDER BY id DESC LIMIT 1", params).fetchone()
        return _result(row) if row else None

    def latest_of(self, ids: set[int]) -> dict[int, EvaluationResult]:
        """The last evaluation row of each of ``ids`` that has one."""
        found: dict[int, EvaluationResult] = {}
        ordered = sorted(ids)
        for start in range(0, len(ordered), _QUERY_CHUNK):
            chunk = ordered[start:start + _QUERY_CHUNK]
            rows = self._db.execute(
                f"SELECT candidate_id, {_RESULT_COLUMNS} FROM evaluations WHERE id IN "
                "(SELECT MAX(id) FROM evaluations WHERE candidate_id IN "
                f"({','.join('?' * len(chunk))}) GROUP BY candidate_id)", tuple(chunk))
            found.update({int(r[0]): _result(r[1:]) for r in rows})
        return found

    def stages(self, candidate_id: int) -> list[tuple[str, EvaluationResult, str]]:
        """(stage, result, worker) of every row of the candidate, in commit order."""
        return [(r[0], _result(r[2:]), r[1]) for r in self._db.execute(
            f"SELECT stage, worker, {_RESULT_COLUMNS} FROM evaluations WHERE candidate_id=? "
            "ORDER BY id", (candidate_id,))]

    def worker_of(self, candidate_id: int) -> str | None:
        return self._db.one("SELECT worker FROM evaluations WHERE candidate_id=? ORDER BY id "
                            "DESC LIMIT 1", (candidate_id,))

    def count(self) -> int:
        return int(self._db.one("SELECT COUNT(*) FROM evaluations"))

    def committed_order(self) -> list[int]:
        """Candidate ids in the order their first evaluation row was committed (a candidate's
        rows, one per stage then ``main``, are committed together)."""
        return [int(r[0]) for r in self._db.execute(
            "SELECT candidate_id FROM evaluations GROUP BY candidate_id ORDER BY MIN(id)")]

    def iter_committed_order(self) -> Iterator[int]:
        """``committed_order`` read lazily, row by row (a caller that stops early reads only
        the first rows)."""
        seen: set[int] = set()
        rows = self._db.execute("SELECT candidate_id FROM evaluations ORDER BY id")
        for (candidate_id,) in rows:
            if candidate_id not in seen:
                seen.add(candidate_id)
                yield int(candidate_id)

    def first_commit_times(self) -> dict[int, float]:
        return {int(c): float(t) for c, t in self._db.execute(
            "SELECT candidate_id, MIN(created_at) FROM evaluations GROUP BY candidate_id")}

    def correct_stage_scores(self, stages: Sequence[str]) -> list[tuple[int, str, float]]:
        """(candidate id, stage, score) of the ok stage rows of correct candidates."""
        return [(int(c), s, float(v)) for c, s, v in self._db.execute(
            "SELECT e.candidate_id, e.stage, e.combined_score FROM evaluations e "
            "JOIN candidates c ON c.id = e.candidate_id "
            "WHERE c.status = 'correct' AND e.status = 'ok' AND e.combined_score IS NOT NULL "
            f"AND e.stage IN ({','.join('?' * len(stages))}) ORDER BY e.id", tuple(stages))]

    def latest_durations(self, after_id: int = 0, limit: int = 101) -> list[tuple[int, float]]:
        """(id, duration_s) of the last ``limit`` evaluations (``main`` rows: a candidate's
        whole evaluation) after ``after_id``, oldest first."""
        rows = self._db.execute(
            "SELECT id, duration_s FROM evaluations WHERE stage = 'main' AND id > ? "
            "ORDER BY id DESC LIMIT ?", (after_id, limit)).fetchall()
        return [(int(i), float(d or 0.0)) for i, d in reversed(rows)]

    def workers(self) -> dict[str, int]:
        """Evaluations (main rows) per worker that ran them."""
        return {str(w): int(n) for w, n in self._db.execute(
            "SELECT worker, COUNT(*) FROM evaluations WHERE stage='main' GROUP BY worker")}
