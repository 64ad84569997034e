"""The ``contexts`` table: every LLM call, messages and reply byte-identical, with its tokens,
cost and latency (the ledger is computed from it)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from cambrian.store.codec import loads
from cambrian.store.database import Database
from cambrian.store.rows import ContextRow, LedgerRow, NewContext, Spend

_COLUMNS = ("id, purpose, model, provider, params_json, messages_json, response_text, "
            "finish_reason, prompt_tokens, completion_tokens, cached_tokens, cost_usd, latency_s, "
            "error, parent_context_id, created_at, response_dropped_chars")


def _row(row: Sequence[Any]) -> ContextRow:
    return ContextRow(
        id=row[0], purpose=row[1], model=row[2], provider=row[3], params=loads(row[4], {}),
        messages=loads(row[5], []), response_text=row[6], finish_reason=row[7],
        prompt_tokens=row[8], completion_tokens=row[9], cached_tokens=row[10],
        cost_usd=row[11], latency_s=row[12], error=row[13], parent_context_id=row[14],
        created_at=row[15], response_dropped_chars=row[16])


class Contexts:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, new: NewContext) -> int:
        codec = self._db.codec
        cursor = self._db.execute(
            "INSERT INTO contexts(purpose, model, provider, params_json, messages_json, "
            "response_text, finish_reason, prompt_tokens, completion_tokens, cached_tokens, "
            "cost_usd, latency_s, error, parent_context_id, created_at, response_dropped_chars) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (new.purpose, new.model, new.provider, codec.json(new.params),
             codec.json(new.messages), codec.text(new.response_text), new.finish_reason,
             new.prompt_tokens, new.completion_tokens, new.cached_tokens, new.cost_usd,
             new.latency_s, codec.text(new.error), new.parent_context_id, time.time(),
             new.response_dropped_chars),
        )
        return int(cursor.lastrowid or 0)

    def get(self, context_id: int) -> ContextRow:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM contexts WHERE id=?",
                               (context_id,)).fetchone()
        if row is None:
            raise KeyError(f"no LLM context {context_id}")
        return _row(row)

    def list(self, purpose: str | None = None) -> list[ContextRow]:
        sql, params = f"SELECT {_COLUMNS} FROM contexts", ()
        if purpose is not None:
            sql, params = sql + " WHERE purpose=?", (purpose,)
        return [_row(r) for r in self._db.execute(sql + " ORDER BY id", params)]

    def recent(self, count: int) -> list[ContextRow]:
        """The last ``count`` calls, oldest first."""
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM contexts ORDER BY id DESC LIMIT ?",
                                (count,)).fetchall()
        return [_row(r) for r in reversed(rows)]

    def last_id(self, purpose: str) -> int | None:
        value = self._db.one("SELECT MAX(id) FROM contexts WHERE purpose=?", (purpose,))
        return int(value) if value is not None else None

    def count(self, purpose: str | None = None, model: str | None = None) -> int:
        sql, params = "SELECT COUNT(*) FROM contexts WHERE 1=1", []
        if purpose is not None:
            sql += " AND purpose=?"
            params.append(purpose)
        if model is not None:
            sql += " AND model=?"
            params.append(model)
        return int(self._db.one(sql, params))

    def count_by_purpose(self) -> dict[str, int]:
        return {str(p): int(n) for p, n in self._db.execute(
            "SELECT purpose, COUNT(*) FROM contexts GROUP BY purpose")}

    def count_by_model(self, purpose: str) -> dict[str, int]:
        return {str(m): int(n) for m, n in self._db.execute(
            "SELECT model, COUNT(*) FROM contexts WHERE purpose=? GROUP BY model", (purpose,))}

    def ledger(self) -> list[LedgerRow]:
        """Calls, tokens and cost per model."""
        rows = self._db.execute(
            "SELECT model, COUNT(*), COALESCE(SUM(error != ''),0), COALESCE(SUM(prompt_tokens),0), "
            "COALESCE(SUM(completion_tokens),0), COALESCE(SUM(cached_tokens),0), "
            "COALESCE(SUM(cost_usd),0), COALESCE(SUM(latency_s),0) "
            "FROM contexts GROUP BY model ORDER BY model")
        return [LedgerRow(str(m), int(c), int(f), int(p), int(o), int(k), float(cost), float(lat))
                for m, c, f, p, o, k, cost, lat in rows]

    def transport_rows(self, after_id: int = 0) -> list[tuple[int, str, float, float, str]]:
        """(id, model, created_at, latency_s, error) of every call after ``after_id``: what
        the transport figures (llm/health.py) are computed from, without the messages."""
        return [(int(i), str(m), float(at), float(lat or 0.0), str(err or "")) for i, m, at, lat, err
                in self._db.execute("SELECT id, model, created_at, latency_s, error FROM contexts "
                                    "WHERE id > ? ORDER BY id", (after_id,))]

    def latest_costs(self, model: str, after_id: int = 0,
                     limit: int = 101) -> list[tuple[int, str, float, float]]:
        """(id, purpose, latency_s, cost_usd) of the model's last ``limit`` calls after
        ``after_id`` that got a reply, oldest first (what a novelty judge call costs is
        estimated from them: search/novelty_cost.py)."""
        rows = self._db.execute(
            "SELECT id, purpose, latency_s, cost_usd FROM contexts WHERE model = ? AND id > ? "
            "AND error = '' ORDER BY id DESC LIMIT ?", (model, after_id, limit)).fetchall()
        return [(int(i), str(p), float(lat or 0.0), float(usd or 0.0))
                for i, p, lat, usd in reversed(rows)]

    def requests_by_model(self) -> dict[str, int]:
        """Calls per model (read from the model index alone)."""
        return {str(m): int(n) for m, n in self._db.execute(
            "SELECT model, COUNT(*) FROM contexts GROUP BY model")}

    def failed_rows(self) -> list[tuple[str, float, str]]:
        """(model, created_at, error) of every call that failed, oldest first."""
        return [(str(m), float(at), str(err)) for m, at, err in self._db.execute(
            "SELECT model, created_at, error FROM contexts WHERE error != '' ORDER BY id")]

    def recent_latencies(self, count: int) -> list[tuple[str, float]]:
        """(model, latency_s) of the last ``count`` calls that got a reply, oldest first."""
        rows = self._db.execute("SELECT model, latency_s FROM contexts WHERE error = '' "
                                "ORDER BY id DESC LIMIT ?", (count,)).fetchall()
        return [(str(m), float(lat or 0.0)) for m, lat in reversed(rows)]

    def spend(self) -> Spend:
        row = self._db.execute(
            "SELECT COALESCE(SUM(cost_usd),0), COALESCE(SUM(prompt_tokens+completion_tokens),0), "
            "COUNT(*) FROM contexts").fetchone()
        return Spend(float(row[0]), int(row[1]), int(row[2]))

    def total_cost(self) -> float:
        return self.spend().cost_usd
