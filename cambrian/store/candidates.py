"""The ``candidates`` table: every proposed program, including failed and rejected ones. A
program of several files is kept as its files (``blobs.py``) and read back as its bundle text,
so a row's ``source`` is the program's text whatever its number of files."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from cambrian.core.evaluation import EvaluationResult
from cambrian.core.objective import Objective
from cambrian.core.status import EVALUATED, CandidateStatus
from cambrian.store.blobs import ProgramBlobs
from cambrian.store.codec import finite_or_none, loads
from cambrian.store.database import Database
from cambrian.store.evaluations import Evaluations
from cambrian.store.rows import (
    CandidateRow,
    IntentOutcome,
    NewCandidate,
    PromptPull,
    ReplayRow,
)
from cambrian.task.program_files import is_bundle, split_files

_COLUMNS = ("id, generation, island, parent_id, operator, status, source, source_hash, "
            "description, model, score, error, notes_json, context_id, created_at, language")
_EVALUATED_SQL = "(" + ",".join(f"'{s.value}'" for s in sorted(EVALUATED)) + ")"
_QUERY_CHUNK = 500  # below SQLite's bound-parameter limit


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _row(row: Sequence[Any]) -> CandidateRow:
    return CandidateRow(
        id=row[0], generation=row[1], island=row[2], parent_id=row[3], operator=row[4],
        status=CandidateStatus(row[5]), source=row[6], source_hash=row[7], description=row[8],
        model=row[9], score=row[10], error=row[11], notes=loads(row[12], {}),
        context_id=row[13], created_at=row[14], language=row[15])


def _in(values: Sequence[Any]) -> str:
    return f"({','.join('?' * len(values))})"


class Candidates:
    def __init__(self, db: Database, evaluations: Evaluations) -> None:
        self._db = db
        self._evaluations = evaluations
        self.blobs = ProgramBlobs(db)

    def _rows(self, rows: Iterable[Sequence[Any]]) -> list[CandidateRow]:
        """Typed rows, a program of several files given its bundle text."""
        typed = [_row(r) for r in rows]
        several = [r.id for r in typed if r.source is None and r.source_hash is not None]
        if not several:
            return typed
        bundles = self.blobs.bundles(several)
        return [replace(r, source=bundles[r.id]) if r.id in bundles else r for r in typed]

    def _one(self, row: Sequence[Any] | None) -> CandidateRow | None:
        return self._rows([row])[0] if row else None

    # ------------------------------------------------------------------ writes

    def add(self, new: NewCandidate) -> int:
        codec = self._db.codec
        several = new.source is not None and is_bundle(new.source)
        cursor = self._db.execute(
            "INSERT INTO candidates(generation, island, parent_id, operator, status, source, "
            "source_hash, language, description, model, context_id, error, notes_json, created_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (new.generation, new.island, new.parent_id, new.operator, str(new.status),
             None if several else codec.text(new.source),
             source_hash(new.source) if new.source is not None else None,
             new.language, codec.text(new.description), new.model, new.context_id,
             codec.text(new.error), codec.json(new.notes), time.time()),
        )
        candidate_id = int(cursor.lastrowid or 0)
        if several:
            assert new.source is not None
            self.blobs.put(candidate_id, split_files(new.source))
        return candidate_id

    def put_files(self, candidate_id: int, source: str) -> None:
        """The files of a program of several files, for a row written raw (trace import)."""
        self.blobs.put(candidate_id, split_files(source))

    def update(self, candidate_id: int, *, status: CandidateStatus, score: float | None = None,
               error: str | None = None, notes: dict[str, Any] | None = None) -> None:
        sets = ["status=?", "score=?"]
        params: list[Any] = [str(status), finite_or_none(score)]
        if error is not None:
            sets.append("error=?")
            params.append(self._db.codec.text(error))
        if notes is not None:
            sets.append("notes_json=?")
            params.append(self._db.codec.json(notes))
        params.append(candidate_id)
        self._db.execute(f"UPDATE candidates SET {', '.join(sets)} WHERE id=?", params)

    # ------------------------------------------------------------------ single rows

    def get(self, candidate_id: int) -> CandidateRow:
        found = self.find(candidate_id)
        if found is None:
            raise KeyError(f"no candidate {candidate_id}")
        return found

    def find(self, candidate_id: int) -> CandidateRow | None:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM candidates WHERE id=?",
                               (int(candidate_id),)).fetchone()
        return self._one(row)

    def exists(self, candidate_id: int) -> bool:
        return self._db.one("SELECT 1 FROM candidates WHERE id=?", (candidate_id,)) is not None

    def find_evaluated(self, digest: str) -> CandidateRow | None:
        """The first evaluated candidate with this exact source, if any."""
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM candidates WHERE source_hash=? "
            f"AND status IN {_EVALUATED_SQL} ORDER BY id LIMIT 1", (digest,)).fetchone()
        return self._one(row)

    def find_by_source(self, source: str) -> CandidateRow | None:
        """The first candidate holding exactly this program (evaluated or waiting)."""
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM candidates WHERE source_hash=? "
            f"AND (status='pending' OR status IN {_EVALUATED_SQL}) ORDER BY id LIMIT 1",
            (source_hash(source),)).fetchone()
        return self._one(row)

    def best(self, objective: Objective) -> CandidateRow | None:
        """The best correct candidate (the earliest among equals)."""
        order = "DESC" if objective.maximize else "ASC"
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM candidates WHERE status='correct' AND score IS NOT NULL "
            f"ORDER BY score {order}, id ASC LIMIT 1").fetchone()
        return self._one(row)

    def latest_evaluated_child(self, parent_id: int) -> CandidateRow | None:
        """The child of ``parent_id`` whose evaluation was committed last."""
        row = self._db.execute(
            f"SELECT {', '.join('c.' + c.strip() for c in _COLUMNS.split(','))} FROM candidates c "
            "JOIN evaluations e ON e.candidate_id = c.id "
            f"WHERE c.parent_id = ? AND c.status IN {_EVALUATED_SQL} "
            "GROUP BY c.id ORDER BY MIN(e.id) DESC LIMIT 1", (parent_id,)).fetchone()
        return self._one(row)

    # ------------------------------------------------------------------ many rows

    def list(self, *statuses: CandidateStatus | str) -> list[CandidateRow]:
        sql = f"SELECT {_COLUMNS} FROM candidates"
        params = tuple(str(s) for s in statuses)
        if statuses:
            sql += f" WHERE status IN {_in(params)}"
        return self._rows(self._db.execute(sql + " ORDER BY id", params))

    def with_note(self, key: str) -> list[CandidateRow]:
        """Candidates whose notes hold ``key``, by id."""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM candidates WHERE json_extract(notes_json, ?) IS NOT NULL "
            "ORDER BY id", (f"$.{key}",))
        return self._rows(rows)

    def correct_with_note(self, key: str, value: str, after_id: int = 0) -> list[CandidateRow]:
        """Correct candidates after ``after_id`` whose note ``key`` is ``value``, by id."""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM candidates WHERE id > ? AND status = ? "
            "AND json_extract(notes_json, ?) = ? ORDER BY id",
            (after_id, str(CandidateStatus.CORRECT), f"$.{key}", value))
        return self._rows(rows)

    def children(self, parent_id: int) -> list[CandidateRow]:
        """Every candidate proposed from ``parent_id``, by id."""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM candidates WHERE parent_id = ? ORDER BY id", (parent_id,))
        return self._rows(rows)

    def recent_evaluated(self, limit: int, exclude_id: int | None = None) -> list[CandidateRow]:
        """The last ``limit`` evaluated candidates by id (oldest first)."""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM candidates WHERE status IN {_EVALUATED_SQL} AND id != ? "
            "ORDER BY id DESC LIMIT ?", (-1 if exclude_id is None else exclude_id, limit))
        return self._rows(reversed(rows.fetchall()))

    def by_ids(self, ids: set[int]) -> dict[int, CandidateRow]:
        found: dict[int, CandidateRow] = {}
        ordered = sorted(ids)
        for start in range(0, len(ordered), _QUERY_CHUNK):
            chunk = ordered[start:start + _QUERY_CHUNK]
            for row in self._rows(self._db.execute(
                    f"SELECT {_COLUMNS} FROM candidates WHERE id IN {_in(chunk)}", tuple(chunk))):
                found[row.id] = row
        return found

    def sources(self, ids: set[int]) -> dict[int, str | None]:
        found: dict[int, str | None] = {}
        ordered = sorted(ids)
        for start in range(0, len(ordered), _QUERY_CHUNK):
            chunk = ordered[start:start + _QUERY_CHUNK]
            rows = self._db.execute(f"SELECT id, source FROM candidates WHERE id IN {_in(chunk)}",
                                    tuple(chunk))
            found.update({int(i): s for i, s in rows})
        found.update(self.blobs.bundles([i for i, s in found.items() if s is None]))
        return found

    def count(self, *statuses: CandidateStatus | str) -> int:
        sql = "SELECT COUNT(*) FROM candidates"
        params = tuple(str(s) for s in statuses)
        if statuses:
            sql += f" WHERE status IN {_in(params)}"
        return int(self._db.one(sql, params))

    def count_by_status(self) -> dict[CandidateStatus, int]:
        return {CandidateStatus(s): int(n) for s, n in self._db.execute(
            "SELECT status, COUNT(*) FROM candidates GROUP BY status")}

    def max_generation(self) -> int:
        value = self._db.one("SELECT MAX(generation) FROM candidates")
        return int(value) if value is not None else -1

    def children_counts(self, after_id: int = 0) -> dict[int, int]:
        """Children per parent, counting every proposal that produced a program (among the
        candidates after ``after_id``)."""
        rows = self._db.execute(
            "SELECT parent_id, COUNT(*) FROM candidates WHERE id > ? AND parent_id IS NOT NULL "
            "AND source_hash IS NOT NULL GROUP BY parent_id", (after_id,))
        return {int(p): int(n) for p, n in rows}

    def scores(self, status: CandidateStatus = CandidateStatus.CORRECT) -> dict[int, float | None]:
        return {int(i): s for i, s in self._db.execute(
            "SELECT id, score FROM candidates WHERE status=? ORDER BY id", (str(status),))}

    def evaluated_in_commit_order(self) -> list[tuple[CandidateRow, EvaluationResult]]:
        """Evaluated candidates (correct, incorrect or screened) in the order their results were
        committed, each with its last evaluation: what selectors replay on resume."""
        rows = self._db.execute(
            f"SELECT {', '.join('c.' + c.strip() for c in _COLUMNS.split(','))} "
            "FROM candidates c JOIN (SELECT candidate_id, MIN(id) AS first_id "
            "FROM evaluations GROUP BY candidate_id) first ON first.candidate_id = c.id "
            f"WHERE c.status IN {_EVALUATED_SQL} ORDER BY first.first_id").fetchall()
        latest = self._evaluations.latest_of({int(r[0]) for r in rows})
        return [(r, latest[r.id]) for r in self._rows(rows) if r.id in latest]

    def replay_rows(self, after_evaluation: int = 0) -> list[ReplayRow]:
        """What ``evaluated_in_commit_order`` gives a resumed selector, in the same order, read
        lean: no source, output or private metrics is loaded or decoded (a resume of 100,000
        programs reads this once). ``after_evaluation``: only the candidates evaluated after
        that evaluation row (what a resume snapshot did not cover)."""
        rows = self._db.execute(
            "SELECT c.id, c.parent_id, c.island, c.generation, c.status, c.score, "
            "COALESCE(length(c.source), (SELECT SUM(length(b.text)) FROM candidate_files f "
            "JOIN blobs b ON b.sha256 = f.sha256 WHERE f.candidate_id = c.id)), e.public_json, CASE json_type(e.extra_json, '$.cases') "
            "WHEN 'array' THEN json_extract(e.extra_json, '$.cases') END "
            "FROM (SELECT candidate_id, MIN(id) AS first_id, MAX(id) AS last_id FROM evaluations "
            "WHERE id > ? GROUP BY candidate_id) f JOIN candidates c ON c.id = f.candidate_id "
            f"JOIN evaluations e ON e.id = f.last_id WHERE c.status IN {_EVALUATED_SQL} "
            "ORDER BY f.first_id", (after_evaluation,))
        statuses = {s.value: s for s in CandidateStatus}
        return [ReplayRow(int(i), parent, island, generation, statuses[status], score,
                          int(length or 0), loads(public, {}), loads(cases, None))
                for i, parent, island, generation, status, score, length, public, cases in rows]

    def intent_outcomes(self) -> list[IntentOutcome]:
        """Every evaluated candidate made with a mutation intent (``notes.intent``), in commit
        order, with its parent's score when the parent is correct (read through the index on
        the intent: a store of programs made without intents is not read row by row)."""
        rows = self._db.execute(
            "SELECT * FROM (SELECT c.id, c.parent_id, c.status, c.score, "
            "json_extract(c.notes_json, '$.intent'), (SELECT MIN(e.created_at) FROM evaluations "
            "e WHERE e.candidate_id = c.id), c.island, c.notes_json, "
            "CASE p.status WHEN 'correct' THEN p.score END, (SELECT MIN(e.id) FROM evaluations e "
            "WHERE e.candidate_id = c.id) AS first_id FROM candidates c "
            "LEFT JOIN candidates p ON p.id = c.parent_id "
            "WHERE json_extract(c.notes_json, '$.intent') >= '' "  # a text: the index's range
            f"AND +c.status IN {_EVALUATED_SQL}) WHERE first_id IS NOT NULL ORDER BY first_id")
        return [IntentOutcome(int(i), parent, CandidateStatus(status), score, str(intent),
                              float(at), island, loads(notes, {}), parent_score)
                for i, parent, status, score, intent, at, island, notes, parent_score, _ in rows]

    def prompt_pulls(self) -> list[PromptPull]:
        """Candidates made under a co-evolved system prompt (``notes.prompt_id``), pending and
        duplicate ones left out, each with its parent's score."""
        rows = self._db.execute(
            "SELECT json_extract(c.notes_json, '$.prompt_id'), c.status, c.score, p.score "
            "FROM candidates c LEFT JOIN candidates p ON p.id = c.parent_id "
            "WHERE json_extract(c.notes_json, '$.prompt_id') IS NOT NULL "
            "AND c.status NOT IN ('pending', 'duplicate') ORDER BY c.id")
        return [PromptPull(int(p), CandidateStatus(s), score, parent)
                for p, s, score, parent in rows]
