"""The run store: one SQLite file per run (WAL), written by the single asyncio loop thread.

Every state change the search depends on is committed in one transaction together with the
record that caused it, so killing the process at any moment leaves a consistent store and
``resume`` simply reopens it.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.evaluate.result import EvaluationResult
from cambrian.llm.base import LLMRequest, LLMResponse
from cambrian.store.schema import DDL, SCHEMA_VERSION

STORE_FILENAME = "run.sqlite"
# Candidate statuses with a committed evaluation: each spent a generation of the budget.
# "screened": stopped at a tiered evaluation's quick stage, no full-set score (judge/tiers.py).
EVALUATED_STATUSES = ("correct", "incorrect", "screened")
_EVALUATED_SQL = "('correct','incorrect','screened')"


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=_json_default, allow_nan=False)


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def _finite_or_none(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _clean(value: Any) -> Any:
    """Replace NaN/inf (not representable in strict JSON) by None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


@dataclass(frozen=True)
class CandidateRow:
    id: int
    generation: int
    island: int | None
    parent_id: int | None
    operator: str
    status: str
    source: str | None
    source_hash: str | None
    description: str
    model: str | None
    score: float | None
    error: str
    notes: dict[str, Any]


_CANDIDATE_COLUMNS = (
    "id, generation, island, parent_id, operator, status, source, source_hash, description, "
    "model, score, error, notes_json"
)


def _candidate(row: sqlite3.Row | tuple) -> CandidateRow:
    return CandidateRow(*row[:12], notes=json.loads(row[12]))


class Store:
    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection
        self._depth = 0

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def open(cls, path: Path, *, create: bool = False) -> Store:
        path = Path(path)
        if path.suffix != ".sqlite":  # a run directory
            path = path / STORE_FILENAME
        if not create and not path.exists():
            raise FileNotFoundError(f"no run store at {path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("PRAGMA foreign_keys=ON")
        connection.executescript(DDL)
        store = cls(path, connection)
        version = store.get_meta("schema_version")
        if version is None:
            store.set_meta("schema_version", str(SCHEMA_VERSION))
        elif int(version) != SCHEMA_VERSION:
            raise RuntimeError(
                f"{path} uses store schema {version}; this Cambrian reads schema {SCHEMA_VERSION}"
            )
        return store

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes atomically; nested uses join the outermost transaction."""
        if self._depth == 0:
            self._db.execute("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            if self._depth == 0:
                self._db.execute("ROLLBACK")
            raise
        self._depth -= 1
        if self._depth == 0:
            self._db.execute("COMMIT")

    def execute(self, sql: str, params: tuple | dict = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, params)

    # ------------------------------------------------------------------ meta / run

    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def create_run(
        self,
        *,
        run_id: str,
        task_name: str,
        task_dir: str,
        direction: str,
        language: str,
        config: dict[str, Any],
        seed: int,
        code_version: str,
    ) -> None:
        self._db.execute(
            "INSERT INTO runs(id, created_at, task_name, task_dir, direction, language, "
            "config_json, seed, code_version) VALUES (?,?,?,?,?,?,?,?,?)",
            (run_id, time.time(), task_name, task_dir, direction, language, _dumps(config), seed,
             code_version),
        )

    def run_info(self) -> dict[str, Any]:
        row = self._db.execute(
            "SELECT id, created_at, task_name, task_dir, direction, language, config_json, seed, "
            "code_version, framework FROM runs LIMIT 1"
        ).fetchone()
        if row is None:
            raise RuntimeError(f"{self.path} holds no run")
        keys = ("id", "created_at", "task_name", "task_dir", "direction", "language", "config",
                "seed", "code_version", "framework")
        info = dict(zip(keys, row))
        info["config"] = json.loads(info["config"])
        return info

    # ------------------------------------------------------------------ candidates

    def add_candidate(
        self,
        *,
        generation: int,
        island: int | None,
        parent_id: int | None,
        operator: str,
        status: str,
        language: str,
        source: str | None = None,
        description: str = "",
        model: str | None = None,
        context_id: int | None = None,
        error: str = "",
        notes: dict[str, Any] | None = None,
    ) -> int:
        cursor = self._db.execute(
            "INSERT INTO candidates(generation, island, parent_id, operator, status, source, "
            "source_hash, language, description, model, context_id, error, notes_json, created_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (generation, island, parent_id, operator, status, source,
             source_hash(source) if source is not None else None, language, description, model,
             context_id, error, _dumps(_clean(notes or {})), time.time()),
        )
        return int(cursor.lastrowid)

    def update_candidate(
        self,
        candidate_id: int,
        *,
        status: str,
        score: float | None = None,
        error: str | None = None,
        notes: dict[str, Any] | None = None,
    ) -> None:
        sets = ["status=?", "score=?"]
        params: list[Any] = [status, _finite_or_none(score)]
        if error is not None:
            sets.append("error=?")
            params.append(error)
        if notes is not None:
            sets.append("notes_json=?")
            params.append(_dumps(_clean(notes)))
        params.append(candidate_id)
        self._db.execute(f"UPDATE candidates SET {', '.join(sets)} WHERE id=?", params)

    def candidate(self, candidate_id: int) -> CandidateRow:
        row = self._db.execute(
            f"SELECT {_CANDIDATE_COLUMNS} FROM candidates WHERE id=?", (candidate_id,)
        ).fetchone()
        if row is None:
            raise KeyError(f"no candidate {candidate_id}")
        return _candidate(row)

    def candidates(self, *statuses: str) -> list[CandidateRow]:
        sql = f"SELECT {_CANDIDATE_COLUMNS} FROM candidates"
        if statuses:
            sql += f" WHERE status IN ({','.join('?' * len(statuses))})"
        return [_candidate(r) for r in self._db.execute(sql + " ORDER BY id", statuses)]

    def find_evaluated(self, digest: str) -> CandidateRow | None:
        """The first evaluated candidate with this exact source, if any."""
        row = self._db.execute(
            f"SELECT {_CANDIDATE_COLUMNS} FROM candidates WHERE source_hash=? "
            f"AND status IN {_EVALUATED_SQL} ORDER BY id LIMIT 1",
            (digest,),
        ).fetchone()
        return _candidate(row) if row else None

    def find_by_source(self, source: str) -> CandidateRow | None:
        """The first candidate holding exactly this program (evaluated or waiting)."""
        row = self._db.execute(
            f"SELECT {_CANDIDATE_COLUMNS} FROM candidates WHERE source_hash=? "
            f"AND (status='pending' OR status IN {_EVALUATED_SQL}) ORDER BY id LIMIT 1",
            (source_hash(source),),
        ).fetchone()
        return _candidate(row) if row else None

    def max_generation(self) -> int:
        row = self._db.execute("SELECT MAX(generation) FROM candidates").fetchone()
        return int(row[0]) if row and row[0] is not None else -1

    def count(self, *statuses: str) -> int:
        sql = "SELECT COUNT(*) FROM candidates"
        if statuses:
            sql += f" WHERE status IN ({','.join('?' * len(statuses))})"
        return int(self._db.execute(sql, statuses).fetchone()[0])

    # ------------------------------------------------------------------ evaluations / edges

    def add_evaluation(self, candidate_id: int, result: EvaluationResult, stage: str = "main") -> int:
        cursor = self._db.execute(
            "INSERT INTO evaluations(candidate_id, stage, status, combined_score, public_json, "
            "private_json, text_feedback, error, stdout, stderr, duration_s, extra_json, "
            "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (candidate_id, stage, result.status, _finite_or_none(result.combined_score),
             _dumps(_clean(result.public)), _dumps(_clean(result.private)), result.text_feedback,
             result.error, result.stdout, result.stderr, result.duration_s,
             _dumps(_clean(result.extra)), time.time()),
        )
        return int(cursor.lastrowid)

    def evaluation(self, candidate_id: int, stage: str | None = None) -> EvaluationResult | None:
        sql = (
            "SELECT status, combined_score, public_json, private_json, text_feedback, error, "
            "stdout, stderr, duration_s, extra_json FROM evaluations WHERE candidate_id=?"
        )
        params: tuple = (candidate_id,)
        if stage is not None:
            sql += " AND stage=?"
            params += (stage,)
        row = self._db.execute(sql + " ORDER BY id DESC LIMIT 1", params).fetchone()
        if row is None:
            return None
        return EvaluationResult(
            status=row[0], combined_score=row[1], public=json.loads(row[2]),
            private=json.loads(row[3]), text_feedback=row[4], error=row[5], stdout=row[6],
            stderr=row[7], duration_s=row[8], extra=json.loads(row[9]),
        )

    def add_edge(self, parent_id: int, child_id: int, kind: str, operator: str) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO edges(parent_id, child_id, kind, operator) VALUES (?,?,?,?)",
            (parent_id, child_id, kind, operator),
        )

    def children_counts(self) -> dict[int, int]:
        """Children per parent, counting every proposal that produced a program."""
        rows = self._db.execute(
            "SELECT parent_id, COUNT(*) FROM candidates WHERE parent_id IS NOT NULL AND "
            "source IS NOT NULL GROUP BY parent_id"
        )
        return {int(p): int(n) for p, n in rows}

    # ------------------------------------------------------------------ contexts (LLM calls)

    def add_context(
        self,
        *,
        purpose: str,
        model: str,
        provider: str,
        request: LLMRequest,
        response: LLMResponse | None,
        error: str = "",
        parent_context_id: int | None = None,
    ) -> int:
        usage = response.usage if response else None
        cursor = self._db.execute(
            "INSERT INTO contexts(purpose, model, provider, params_json, messages_json, "
            "response_text, finish_reason, prompt_tokens, completion_tokens, cached_tokens, "
            "cost_usd, latency_s, error, parent_context_id, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (purpose, model, provider, _dumps(request.to_dict()["params"]),
             _dumps(request.to_dict()["messages"]), response.text if response else None,
             response.finish_reason if response else None,
             usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0,
             usage.cached_prompt_tokens if usage else 0, response.cost_usd if response else 0.0,
             response.latency_s if response else 0.0, error, parent_context_id, time.time()),
        )
        return int(cursor.lastrowid)

    def ledger(self) -> list[dict[str, Any]]:
        """Calls, tokens and cost per model (the token and cost ledger)."""
        rows = self._db.execute(
            "SELECT model, COUNT(*), SUM(error != ''), SUM(prompt_tokens), "
            "SUM(completion_tokens), SUM(cached_tokens), SUM(cost_usd), SUM(latency_s) "
            "FROM contexts GROUP BY model ORDER BY model"
        )
        keys = ("model", "calls", "failed_calls", "prompt_tokens", "completion_tokens",
                "cached_tokens", "cost_usd", "latency_s")
        return [dict(zip(keys, r)) for r in rows]

    def llm_call_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM contexts").fetchone()[0])

    def total_cost(self) -> float:
        return float(self._db.execute("SELECT COALESCE(SUM(cost_usd),0) FROM contexts").fetchone()[0])

    # ------------------------------------------------------------------ environments

    def add_environment(
        self,
        *,
        evaluator: str,
        contract: str,
        command: str,
        limits: dict[str, Any],
        toolchain: dict[str, Any],
        file_hashes: dict[str, str],
    ) -> int:
        cursor = self._db.execute(
            "INSERT INTO environments(evaluator, contract, command, limits_json, toolchain_json, "
            "file_hashes_json, created_at) VALUES (?,?,?,?,?,?,?)",
            (evaluator, contract, command, _dumps(limits), _dumps(toolchain), _dumps(file_hashes),
             time.time()),
        )
        return int(cursor.lastrowid)

    # ------------------------------------------------------------------ archive / state / events

    def best_candidate(self, maximize: bool = True) -> CandidateRow | None:
        """The best correct candidate (the earliest among equals)."""
        order = "DESC" if maximize else "ASC"
        row = self._db.execute(
            "SELECT id FROM candidates WHERE status='correct' AND score IS NOT NULL "
            f"ORDER BY score {order}, id ASC LIMIT 1").fetchone()
        return self.candidate(int(row[0])) if row else None

    def evaluated_in_commit_order(self) -> list[tuple[CandidateRow, EvaluationResult]]:
        """Evaluated candidates (correct, incorrect or screened) in the order their results were committed,
        each with its last evaluation: what selectors replay on resume."""
        rows = self._db.execute(
            f"SELECT {', '.join('c.' + c.strip() for c in _CANDIDATE_COLUMNS.split(','))}, "
            "first.first_id FROM candidates c JOIN (SELECT candidate_id, MIN(id) AS first_id "
            "FROM evaluations GROUP BY candidate_id) first ON first.candidate_id = c.id "
            f"WHERE c.status IN {_EVALUATED_SQL} ORDER BY first.first_id"
        ).fetchall()
        result = []
        for row in rows:
            candidate = _candidate(row[:13])
            evaluation = self.evaluation(candidate.id)
            assert evaluation is not None
            result.append((candidate, evaluation))
        return result

    def add_embedding(self, candidate_id: int, model: str, vector: Any) -> None:
        import numpy as np

        blob = np.asarray(vector, dtype=np.float32).tobytes()
        self._db.execute("INSERT OR REPLACE INTO embeddings(candidate_id, model, vector) VALUES (?,?,?)",
                         (candidate_id, model, blob))

    def embeddings(self, model: str) -> list[tuple[int, int, Any]]:
        """(candidate id, island, vector) of every program embedded with ``model``."""
        import numpy as np

        rows = self._db.execute(
            "SELECT e.candidate_id, COALESCE(c.island, 0), e.vector FROM embeddings e "
            "JOIN candidates c ON c.id = e.candidate_id WHERE e.model=? ORDER BY e.candidate_id",
            (model,),
        )
        return [(int(c), int(i), np.frombuffer(v, dtype=np.float32)) for c, i, v in rows]

    def add_meta_note(self, evaluated: int, scratchpad: str, recommendations: list[str],
                      context_id: int | None) -> None:
        self._db.execute(
            "INSERT INTO meta_notes(evaluated, scratchpad, recommendations_json, context_id, "
            "created_at) VALUES (?,?,?,?,?)",
            (evaluated, scratchpad, _dumps(recommendations), context_id, time.time()),
        )

    def latest_meta_note(self) -> Any:
        from cambrian.meta.scratchpad import MetaNote

        row = self._db.execute(
            "SELECT evaluated, scratchpad, recommendations_json FROM meta_notes ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return MetaNote(row[0], row[1], json.loads(row[2])) if row else None

    def put_state(self, key: str, value: Any) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO search_state(key, value) VALUES (?,?)", (key, _dumps(value))
        )

    def get_state(self, key: str, default: Any = None) -> Any:
        row = self._db.execute("SELECT value FROM search_state WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def add_event(self, kind: str, payload: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO events(kind, payload_json, created_at) VALUES (?,?,?)",
            (kind, _dumps(_clean(payload)), time.time()),
        )

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT kind, payload_json, created_at FROM events"
        params: tuple = ()
        if kind:
            sql += " WHERE kind=?"
            params = (kind,)
        return [
            {"kind": k, "payload": json.loads(p), "created_at": t}
            for k, p, t in self._db.execute(sql + " ORDER BY id", params)
        ]
