"""Aggregate read queries for displays (the web UI): one query per figure, no program text, so a
page about a run of tens of thousands of candidates stays fast."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cambrian.core.events import StoredEvent, decode
from cambrian.core.objective import Objective
from cambrian.core.status import EVALUATED, CandidateStatus
from cambrian.store.codec import loads
from cambrian.store.database import Database

_EVALUATED_SQL = "(" + ",".join(f"'{s.value}'" for s in sorted(EVALUATED)) + ")"
_IN_TREE_SQL = ("(" + ",".join(f"'{s.value}'" for s in
                                sorted(EVALUATED | {CandidateStatus.PENDING})) + ")")


@dataclass(frozen=True)
class EvaluationPoint:
    """An evaluated candidate, in the order its evaluation was committed."""

    candidate_id: int
    status: CandidateStatus
    score: float | None
    evaluated_at: float  # the commit time of its first evaluation row
    island: int | None
    model: str | None
    operator: str
    parent_id: int | None


@dataclass(frozen=True)
class TreeNode:
    id: int
    parent_id: int | None
    status: CandidateStatus
    score: float | None
    island: int | None
    operator: str
    model: str | None
    generation: int
    reply_refused: bool = False  # a patch_failed whose reply the model did give, refused


@dataclass(frozen=True)
class ModelOutcomes:
    """What one model's children became (see ``cambrian.status.ModelStatus``)."""

    model: str
    programs: int
    evaluated: int
    correct: int
    improved: int


@dataclass(frozen=True)
class RefusedCandidate:
    id: int
    parent_id: int | None
    status: CandidateStatus
    error: str  # the first characters only
    notes: dict[str, object]
    created_at: float


@dataclass(frozen=True)
class FailureRow:
    """A candidate that failed or was refused, with what its classification needs."""

    candidate_id: int
    status: CandidateStatus
    error: str
    notes: dict[str, object]
    evaluation_status: str | None  # its last evaluation's status (incorrect ones)
    verdict: str | None  # a judged task's overall verdict (CE, TLE...)


class Views:
    def __init__(self, db: Database) -> None:
        self._db = db

    def evaluation_points(self, after: int | None = None) -> list[EvaluationPoint]:
        """Every evaluated candidate in commit order (``after``: only those committed after
        candidate ``after``; KeyError when that one has no evaluation)."""
        scope, newer = "", ""
        params: tuple[int, ...] = ()
        if after is not None:  # the rows after its first one, then those candidates' first rows
            since = self._first_evaluation_id(after)
            scope = "WHERE candidate_id IN (SELECT candidate_id FROM evaluations WHERE id > ?) "
            newer, params = " AND f.first_id > ?", (since, since)
        rows = self._db.execute(
            "SELECT c.id, c.status, c.score, f.first_at, c.island, c.model, c.operator, "
            "c.parent_id FROM candidates c JOIN (SELECT candidate_id, MIN(id) AS first_id, "
            f"MIN(created_at) AS first_at FROM evaluations {scope}GROUP BY candidate_id) f "
            f"ON f.candidate_id = c.id WHERE c.status IN {_EVALUATED_SQL}{newer} "
            "ORDER BY f.first_id", params)
        return [EvaluationPoint(int(i), CandidateStatus(s), score, float(t), island, model, op,
                                parent) for i, s, score, t, island, model, op, parent in rows]

    def _first_evaluation_id(self, candidate_id: int) -> int:
        found = self._db.one("SELECT MIN(id) FROM evaluations WHERE candidate_id = ?",
                             (candidate_id,))
        if found is None:
            raise KeyError(candidate_id)
        return int(found)

    def best_score_through(self, objective: Objective, candidate_id: int) -> float | None:
        """The best correct score among the candidates committed up to candidate
        ``candidate_id`` (itself included; KeyError when it has no evaluation)."""
        best = "MAX" if objective.maximize else "MIN"
        value = self._db.one(
            f"SELECT {best}(score) FROM candidates WHERE status = 'correct' AND id IN "
            "(SELECT candidate_id FROM evaluations WHERE id <= ?)",
            (self._first_evaluation_id(candidate_id),))
        return None if value is None else float(value)

    def first_evaluated_at(self) -> float | None:
        """When the run's first evaluation row was committed."""
        value = self._db.one("SELECT created_at FROM evaluations ORDER BY id LIMIT 1")
        return None if value is None else float(value)

    def tree_nodes(self, include_unevaluated: bool = True) -> list[TreeNode]:
        """Every candidate without its program (``include_unevaluated=False``: only evaluated
        and pending ones, no refused, rejected or duplicate proposals)."""
        where = "" if include_unevaluated else f" WHERE status IN {_IN_TREE_SQL}"
        rows = self._db.execute(
            "SELECT id, parent_id, status, score, island, operator, model, generation, "
            f"json_extract(notes_json, '$.reply_refused') FROM candidates{where} ORDER BY id")
        return [TreeNode(int(i), p, CandidateStatus(s), score, island, op, model, int(g),
                         bool(refused))
                for i, p, s, score, island, op, model, g, refused in rows]

    def failure_texts(self, max_chars: int = 240) -> list[tuple[CandidateStatus, str]]:
        """(status, start of the error) of every candidate that failed or was refused."""
        return [(CandidateStatus(s), e or "") for s, e in self._db.execute(
            "SELECT status, substr(error, 1, ?) FROM candidates WHERE status IN "
            "('incorrect', 'patch_failed', 'rejected', 'screened', 'duplicate') ORDER BY id",
            (max_chars,))]

    def failure_rows(self, max_chars: int = 2000) -> list[FailureRow]:
        """Every failed or refused candidate, oldest first, with its last evaluation's status
        and verdict."""
        rows = self._db.execute(
            "SELECT c.id, c.status, substr(c.error, 1, ?), c.notes_json, e.status, "
            "json_extract(e.extra_json, '$.verdict') FROM candidates c LEFT JOIN evaluations e "
            "ON e.id = (SELECT MAX(id) FROM evaluations WHERE candidate_id = c.id) "
            "WHERE c.status IN ('incorrect', 'patch_failed', 'rejected', 'duplicate') "
            "ORDER BY c.id", (max_chars,))
        return [FailureRow(int(i), CandidateStatus(s), e or "", loads(n, {}), es, v)
                for i, s, e, n, es, v in rows]

    def evaluation_statuses(self) -> dict[str, int]:
        """Main evaluation rows per evaluation status (ok, incorrect, timeout, crashed...)."""
        return {str(s): int(n) for s, n in self._db.execute(
            "SELECT status, COUNT(*) FROM evaluations WHERE stage='main' GROUP BY status")}

    def model_outcomes(self, objective: Objective) -> list[ModelOutcomes]:
        """Per model, its children (not the initial program): programs yielded, evaluated,
        correct, and correct ones scoring better than their scored parent."""
        better = ">" if objective.maximize else "<"
        rows = self._db.execute(
            "SELECT c.model, SUM(c.source_hash IS NOT NULL), "
            f"SUM(c.status IN {_EVALUATED_SQL}), SUM(c.status = 'correct'), "
            "SUM(c.status = 'correct' AND c.score IS NOT NULL AND p.score IS NOT NULL "
            f"AND c.score {better} p.score) FROM candidates c "
            "LEFT JOIN candidates p ON p.id = c.parent_id "
            "WHERE c.id != 1 AND c.model IS NOT NULL GROUP BY c.model ORDER BY c.model")
        return [ModelOutcomes(str(m), int(a or 0), int(b or 0), int(c or 0), int(d or 0))
                for m, a, b, c, d in rows]

    def refused(self, *, novelty_only: bool = False, limit: int = 200) -> list[RefusedCandidate]:
        """The latest rejected candidates (``novelty_only``: refused by the novelty filter,
        whose notes hold the similarity to the nearest program)."""
        extra = " AND json_extract(notes_json, '$.similarity') IS NOT NULL" if novelty_only else ""
        rows = self._db.execute(
            "SELECT id, parent_id, status, substr(error, 1, 400), notes_json, created_at "
            f"FROM candidates WHERE status = 'rejected'{extra} ORDER BY id DESC LIMIT ?",
            (limit,))
        return [RefusedCandidate(int(i), p, CandidateStatus(s), e or "", loads(n, {}), float(t))
                for i, p, s, e, n, t in rows]

    def count_refused(self, novelty_only: bool = False) -> int:
        extra = " AND json_extract(notes_json, '$.similarity') IS NOT NULL" if novelty_only else ""
        return int(self._db.one(
            f"SELECT COUNT(*) FROM candidates WHERE status = 'rejected'{extra}"))

    def spend_split(self, at: float) -> tuple[tuple[float, int], list[tuple[float, float, int]]]:
        """The cost in USD and tokens of the LLM calls made up to ``at``, and (time, cost,
        tokens) of each call made after it, in time order: one pass over the calls (group 0
        sums the earlier ones, each later one is a group of its own)."""
        rows = self._db.execute(
            "SELECT CASE WHEN created_at > ? THEN id ELSE 0 END AS call, MAX(created_at), "
            "SUM(cost_usd), SUM(prompt_tokens + completion_tokens) FROM contexts GROUP BY call",
            (at,)).fetchall()
        before = next(((float(c), int(k)) for call, _, c, k in rows if call == 0), (0.0, 0))
        after = sorted((float(t), float(c), int(k)) for call, t, c, k in rows if call != 0)
        return before, after

    def calls_after(self, context_id: int) -> list[tuple[int, float, float, int, int, int, float,
                                                          str, str, str]]:
        """(id, time, cost in USD, prompt, completion and cached tokens, latency, model,
        purpose, error) of each LLM call after call ``context_id``, in id order, without the
        messages: what the UI's running ledger (``ui/cache.py``) is extended with."""
        return [(int(i), float(t), float(c or 0.0), int(p or 0), int(o or 0), int(k or 0),
                 float(lat or 0.0), str(m), str(purpose), str(e or ""))
                for i, t, c, p, o, k, lat, m, purpose, e in self._db.execute(
                    "SELECT id, created_at, cost_usd, prompt_tokens, completion_tokens, "
                    "cached_tokens, latency_s, model, purpose, error FROM contexts "
                    "WHERE id > ? ORDER BY id", (context_id,))]

    def event_ids(self, kind: str, after_id: int = 0) -> list[int]:
        """The ids of the stored events of one kind after ``after_id``, oldest first (read
        from the index, no payload decoded)."""
        return [int(i) for (i,) in self._db.execute(
            "SELECT id FROM events WHERE kind = ? AND id > ? ORDER BY id", (kind, after_id))]

    def event_id_array(self, kind: str, after_id: int = 0) -> np.ndarray:
        """``event_ids`` as an int64 array, read as one text (half the time for half a million
        ids: no Python object per id)."""
        text = self._db.one("SELECT group_concat(id) FROM events WHERE kind = ? AND id > ?",
                            (kind, after_id))
        if not text:
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.fromstring(text, dtype=np.int64, sep=","))

    def events_by_id(self, ids: list[int]) -> list[StoredEvent]:
        """The stored events with these ids, oldest first."""
        found: list[StoredEvent] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            found += [StoredEvent(int(i), decode(k, loads(p, {})), float(t))
                      for i, k, p, t in self._db.execute(
                          "SELECT id, kind, payload_json, created_at FROM events WHERE id IN "
                          f"({','.join('?' * len(chunk))}) ORDER BY id", chunk)]
        return found

    def island_lines(self, objective: Objective,
                     ) -> list[tuple[int | None, int, int, float | None, int | None]]:
        """Per island (None last): its evaluated candidates, the correct ones, and the best
        correct score with its candidate (two SQL aggregates, no row read back per
        candidate)."""
        best = "MAX" if objective.maximize else "MIN"
        counts = self._db.execute(
            "SELECT island, COUNT(*), SUM(status = 'correct') FROM candidates "
            f"WHERE status IN {_EVALUATED_SQL} GROUP BY island").fetchall()
        # SQLite takes a bare column from the row holding the MAX/MIN: the best's id.
        bests = {island: (score, ident) for island, score, ident in self._db.execute(
            f"SELECT island, {best}(score), id FROM candidates WHERE status = 'correct' "
            "AND score IS NOT NULL GROUP BY island")}
        found = [(island, int(count), int(correct or 0), *bests.get(island, (None, None)))
                 for island, count, correct in counts]
        return sorted(found, key=lambda line: (line[0] is None, line[0] or 0))

    def children_of(self, candidate_id: int) -> list[TreeNode]:
        rows = self._db.execute(
            "SELECT id, parent_id, status, score, island, operator, model, generation "
            "FROM candidates WHERE parent_id = ? ORDER BY id", (candidate_id,))
        return [TreeNode(int(i), p, CandidateStatus(s), score, island, op, model, int(g))
                for i, p, s, score, island, op, model, g in rows]
