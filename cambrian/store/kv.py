"""Key-value tables: ``meta`` (run facts: schema version, program file name...) and
``search_state`` (what cannot be derived from the history: RNG, selector and hook states)."""

from __future__ import annotations

from typing import Any

from cambrian.store.codec import loads
from cambrian.store.database import Database


class Meta:
    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, key: str) -> str | None:
        return self._db.one("SELECT value FROM meta WHERE key=?", (key,))

    def set(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                         (key, self._db.codec.text(value)))


class SearchState:
    def __init__(self, db: Database) -> None:
        self._db = db

    def put(self, key: str, value: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO search_state(key, value) VALUES (?,?)",
                         (key, self._db.codec.json(value)))

    def get(self, key: str, default: Any = None) -> Any:
        raw = self._db.one("SELECT value FROM search_state WHERE key=?", (key,))
        return loads(raw, default) if raw is not None else default

    def delete(self, key: str) -> None:
        self._db.execute("DELETE FROM search_state WHERE key=?", (key,))
