"""Tables of the run's side data: meta-scratchpad notes, human guidance, co-evolved system
prompts, novelty embeddings and control requests from outside the run's process."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from cambrian.store.codec import loads
from cambrian.store.database import Database
from cambrian.store.rows import ControlRequest, GuidanceRow, MetaNoteRow, SystemPromptRow

_GUIDANCE = "id, active_text, created_at, action, source, text, restores_id, target"


def _guidance(row: Sequence[Any]) -> GuidanceRow:
    return GuidanceRow(int(row[0]), row[1], float(row[2]), row[3], row[4], row[5], row[6], row[7])


class MetaNotes:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, evaluated: int, scratchpad: str, recommendations: list[str],
            context_id: int | None) -> None:
        self._db.execute(
            "INSERT INTO meta_notes(evaluated, scratchpad, recommendations_json, context_id, "
            "created_at) VALUES (?,?,?,?,?)",
            (evaluated, self._db.codec.text(scratchpad), self._db.codec.json(recommendations),
             context_id, time.time()))

    def list(self) -> list[MetaNoteRow]:
        return [MetaNoteRow(int(e), s, loads(r, []), c, float(t)) for e, s, r, c, t in
                self._db.execute("SELECT evaluated, scratchpad, recommendations_json, context_id, "
                                 "created_at FROM meta_notes ORDER BY id")]

    def latest(self) -> MetaNoteRow | None:
        row = self._db.execute(
            "SELECT evaluated, scratchpad, recommendations_json, context_id, created_at "
            "FROM meta_notes ORDER BY id DESC LIMIT 1").fetchone()
        return MetaNoteRow(int(row[0]), row[1], loads(row[2], []), row[3], float(row[4])) \
            if row else None


class Guidance:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, *, action: str, source: str, text: str, active_text: str,
            restores_id: int | None, target: str = "") -> GuidanceRow:
        codec = self._db.codec
        now = time.time()
        cursor = self._db.execute(
            "INSERT INTO guidance(created_at, action, source, text, active_text, restores_id, "
            "target) VALUES (?,?,?,?,?,?,?)",
            (now, action, source, codec.text(text), codec.text(active_text), restores_id, target))
        return GuidanceRow(int(cursor.lastrowid or 0), active_text, now, action, source, text,
                           restores_id, target)

    def history(self, target: str | None = None) -> list[GuidanceRow]:
        sql, params = f"SELECT {_GUIDANCE} FROM guidance", ()
        if target is not None:
            sql, params = sql + " WHERE target=?", (target,)
        return [_guidance(r) for r in self._db.execute(sql + " ORDER BY id", params)]

    def get(self, version_id: int) -> GuidanceRow | None:
        row = self._db.execute(f"SELECT {_GUIDANCE} FROM guidance WHERE id=?",
                               (version_id,)).fetchone()
        return _guidance(row) if row else None

    def latest(self, target: str = "") -> GuidanceRow | None:
        row = self._db.execute(f"SELECT {_GUIDANCE} FROM guidance WHERE target=? "
                               "ORDER BY id DESC LIMIT 1", (target,)).fetchone()
        return _guidance(row) if row else None

    def before(self, version_id: int, target: str = "") -> GuidanceRow | None:
        row = self._db.execute(f"SELECT {_GUIDANCE} FROM guidance WHERE id<? AND target=? "
                               "ORDER BY id DESC LIMIT 1", (version_id, target)).fetchone()
        return _guidance(row) if row else None

    def targets(self) -> list[str]:
        """Targets with guidance of their own ("candidate:ID", "lineage:ID")."""
        return [t for (t,) in self._db.execute(
            "SELECT DISTINCT target FROM guidance WHERE target != '' ORDER BY target")]


class SystemPrompts:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, text: str, parent_id: int | None = None, evaluated: int = 0,
            context_id: int | None = None) -> int:
        cursor = self._db.execute(
            "INSERT INTO system_prompts(parent_id, text, created_at, evaluated, context_id) "
            "VALUES (?,?,?,?,?)",
            (parent_id, self._db.codec.text(text), time.time(), evaluated, context_id))
        return int(cursor.lastrowid or 0)

    def list(self, include_retired: bool = False) -> list[SystemPromptRow]:
        where = "" if include_retired else " WHERE retired=0"
        return [SystemPromptRow(int(i), p, t, int(e), c, bool(r)) for i, p, t, e, c, r in
                self._db.execute("SELECT id, parent_id, text, evaluated, context_id, retired "
                                 f"FROM system_prompts{where} ORDER BY id")]

    def count(self) -> int:
        return int(self._db.one("SELECT COUNT(*) FROM system_prompts"))

    def last_rewrite_at(self) -> int:
        """Evaluations at the latest rewrite (0 before the first)."""
        return int(self._db.one("SELECT COALESCE(MAX(evaluated), 0) FROM system_prompts"))

    def mark_rewrite(self, prompt_id: int, evaluated: int) -> None:
        self._db.execute("UPDATE system_prompts SET evaluated=MAX(evaluated, ?) WHERE id=?",
                         (evaluated, prompt_id))

    def retire(self, prompt_id: int) -> None:
        self._db.execute("UPDATE system_prompts SET retired=1 WHERE id=?", (prompt_id,))


class Embeddings:
    """Float32 vectors of the mutable code, for novelty rejection."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, candidate_id: int, model: str, vector: Any) -> None:
        blob = np.asarray(vector, dtype=np.float32).tobytes()
        self._db.execute("INSERT OR REPLACE INTO embeddings(candidate_id, model, vector) "
                         "VALUES (?,?,?)", (candidate_id, model, blob))

    def list(self, model: str) -> list[tuple[int, int, np.ndarray]]:
        """(candidate id, island, vector) of every program embedded with ``model``."""
        rows = self._db.execute(
            "SELECT e.candidate_id, COALESCE(c.island, 0), e.vector FROM embeddings e "
            "JOIN candidates c ON c.id = e.candidate_id WHERE e.model=? ORDER BY e.candidate_id",
            (model,))
        return [(int(c), int(i), np.frombuffer(v, dtype=np.float32)) for c, i, v in rows]

    def table(self, model: str, after_id: int = 0) -> tuple[list[int], list[int], np.ndarray]:
        """(candidate ids, islands, (rows, dim) float32 matrix) of every program embedded with
        ``model`` (those after candidate ``after_id``), in id order; the matrix is filled row by
        row, never held twice."""
        count = int(self._db.one("SELECT COUNT(*) FROM embeddings WHERE model=? AND "
                                 "candidate_id>?", (model, after_id)) or 0)
        ids: list[int] = []
        islands: list[int] = []
        matrix: np.ndarray | None = None
        rows = self._db.execute(
            "SELECT e.candidate_id, COALESCE(c.island, 0), e.vector FROM embeddings e "
            "JOIN candidates c ON c.id = e.candidate_id WHERE e.model=? AND e.candidate_id>? "
            "ORDER BY e.candidate_id", (model, after_id))
        for candidate_id, island, blob in rows:
            vector = np.frombuffer(blob, dtype=np.float32)
            if matrix is None:
                matrix = np.empty((count, vector.shape[0]), dtype=np.float32)
            matrix[len(ids)] = vector
            ids.append(int(candidate_id))
            islands.append(int(island))
        if matrix is None:
            return [], [], np.zeros((0, 0), dtype=np.float32)
        return ids, islands, matrix[: len(ids)]

    def count(self, model: str, through: int) -> int:
        """Programs embedded with ``model`` up to candidate ``through`` (an index range)."""
        return int(self._db.one("SELECT COUNT(*) FROM embeddings WHERE model=? AND "
                                "candidate_id<=?", (model, through)) or 0)

    def vectors(self, model: str, candidate_ids: list[int]) -> dict[int, np.ndarray]:
        """The vectors of these candidates embedded with ``model`` (absent: not embedded)."""
        found: dict[int, np.ndarray] = {}
        for start in range(0, len(candidate_ids), 500):
            chunk = candidate_ids[start:start + 500]
            for candidate_id, blob in self._db.execute(
                    "SELECT candidate_id, vector FROM embeddings WHERE model=? AND candidate_id "
                    f"IN ({','.join('?' * len(chunk))})", (model, *chunk)):
                found[int(candidate_id)] = np.frombuffer(blob, dtype=np.float32)
        return found

    def ids(self) -> list[int]:
        return [int(c) for (c,) in self._db.execute(
            "SELECT candidate_id FROM embeddings ORDER BY candidate_id")]

    def models(self) -> set[str]:
        return {str(m) for (m,) in self._db.execute("SELECT DISTINCT model FROM embeddings")}


class ControlRequests:
    """Steering requests written by another process (the web UI) and taken in by the run."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, action: str, payload: dict[str, Any], source: str) -> int:
        cursor = self._db.execute(
            "INSERT INTO control_requests(action, payload_json, source, created_at) "
            "VALUES (?,?,?,?)", (action, self._db.codec.json(payload), source, time.time()))
        return int(cursor.lastrowid or 0)

    def pending(self) -> list[ControlRequest]:
        return [ControlRequest(int(i), a, loads(p, {}), s, float(t)) for i, a, p, s, t in
                self._db.execute("SELECT id, action, payload_json, source, created_at FROM "
                                 "control_requests WHERE applied_at IS NULL ORDER BY id")]

    def mark_applied(self, request_id: int) -> None:
        self._db.execute("UPDATE control_requests SET applied_at=? WHERE id=?",
                         (time.time(), request_id))
