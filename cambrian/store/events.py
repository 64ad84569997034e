"""The ``events`` table: typed events (``cambrian/core/events.py``), stored as kind + payload."""

from __future__ import annotations

import time
from typing import TypeVar

from cambrian.core.events import Event, StoredEvent, decode, kind_of
from cambrian.store.codec import loads
from cambrian.store.database import Database

E = TypeVar("E", bound=Event)
# What only a running session writes, each row with its commit time. (Not the events: a config
# override or guidance change may be written while the run is down.)
_ACTIVITY_TABLES = ("candidates", "evaluations", "contexts")


class Events:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, event: Event) -> int:
        cursor = self._db.execute(
            "INSERT INTO events(kind, payload_json, created_at) VALUES (?,?,?)",
            (kind_of(event), self._db.codec.json(event.payload()), time.time()))
        return int(cursor.lastrowid or 0)

    def list(self, *kinds: type[Event] | str, after_id: int = 0) -> list[StoredEvent]:
        """Stored events of these kinds (all kinds when none is given), oldest first."""
        names = [k if isinstance(k, str) else k.kind for k in kinds]
        sql, params = "SELECT id, kind, payload_json, created_at FROM events WHERE id > ?", [after_id]
        if names:
            sql += f" AND kind IN ({','.join('?' * len(names))})"
            params.extend(names)
        return [StoredEvent(int(i), decode(k, loads(p, {})), float(t))
                for i, k, p, t in self._db.execute(sql + " ORDER BY id", params)]

    def latest(self, kind: type[E]) -> E | None:
        """The newest stored event of one dataclass (None: there is none)."""
        row = self._db.execute(
            "SELECT payload_json FROM events WHERE kind = ? ORDER BY id DESC LIMIT 1",
            (kind.kind,)).fetchone()
        if row is None:
            return None
        event = decode(kind.kind, loads(row[0], {}))
        return event if isinstance(event, kind) else None

    def of_type(self, kind: type[E]) -> list[E]:
        """The events of one dataclass, without their row ids."""
        return [e.event for e in self.list(kind) if isinstance(e.event, kind)]  # type: ignore[misc]

    def last_id(self) -> int:
        return int(self._db.one("SELECT COALESCE(MAX(id), 0) FROM events"))

    def active_seconds(self) -> float:
        """Time the run's sessions ran. A session runs from its ``session_start`` to its
        ``session_end``; one killed before it could write an end ends at its last committed
        activity, so the time the run was down does not count."""
        marks = self._db.execute(
            "SELECT kind, created_at FROM events WHERE kind IN ('session_start', 'session_end') "
            "ORDER BY id").fetchall()
        total, started = 0.0, None
        for kind, at in marks:
            if kind == "session_start":
                if started is not None:  # the previous session was killed
                    total += self.last_activity(started, at) - started
                started = float(at)
            elif started is not None:
                total += max(0.0, float(at) - started)
                started = None
        if started is not None:
            total += self.last_activity(started, None) - started
        return total

    def last_activity(self, since: float, until: float | None) -> float:
        """The latest commit in [since, until): a killed session's end."""
        latest = since
        bound = "" if until is None else " AND created_at < ?"
        params = (since,) if until is None else (since, until)
        for table in _ACTIVITY_TABLES:
            value = self._db.one(f"SELECT MAX(created_at) FROM {table} WHERE created_at >= ?{bound}",
                                 params)
            if value is not None:
                latest = max(latest, float(value))
        return latest

    def payloads(self, kind: str) -> list[dict[str, object]]:
        """Raw payloads of one kind (for a kind registered by a module not loaded here)."""
        return [loads(p, {}) for (p,) in self._db.execute(
            "SELECT payload_json FROM events WHERE kind=? ORDER BY id", (kind,))]
