"""The SQLite connection of a run store: opening (with clear one-line errors for a missing,
damaged, foreign or newer store), numbered migrations, and transactions."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cambrian.store.codec import Codec
from cambrian.store.migrations import SCHEMA_VERSION, migrate
from cambrian.store.schema import DDL, statements

STORE_FILENAME = "run.sqlite"
BUSY_TIMEOUT_MS = 10_000  # a second process (the web UI steering a run) may hold the lock briefly
# The sidecar label cache (``trace/labels.sqlite``) older versions wrote held this table alone.
LABELS_ONLY = {"trace_edit_labels"}


class StoreError(RuntimeError):
    """The store cannot be used; the message says what is wrong and what to do, in one line."""


def store_path(path: Path) -> Path:
    path = Path(path)
    return path if path.suffix == ".sqlite" else path / STORE_FILENAME


def _connect(path: Path, read_only: bool) -> sqlite3.Connection:
    if read_only:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None,
                                     check_same_thread=False)
    else:
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return connection


def _tables(connection: sqlite3.Connection) -> set[str]:
    return {r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _version(connection: sqlite3.Connection, tables: set[str]) -> int | None:
    if "meta" not in tables:
        return None
    row = connection.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    return int(row[0]) if row else None


class Database:
    """One connection; tables of the store run their statements through it."""

    def __init__(self, path: Path, connection: sqlite3.Connection, codec: Codec,
                 read_only: bool = False) -> None:
        self.path = path
        self.codec = codec
        self.read_only = read_only
        self._connection = connection
        self._depth = 0

    def version(self) -> tuple[int, ...]:
        """Changes with every commit: the store file's and its write-ahead log's size and change
        time (a cache of what was read from the store is good while this stays the same)."""
        found: list[int] = []
        for path in (self.path, self.path.with_name(self.path.name + "-wal")):
            try:
                info = path.stat()
            except FileNotFoundError:
                found += [0, 0, 0]
                continue
            found += [info.st_ino, info.st_size, info.st_mtime_ns]
        return tuple(found)

    @classmethod
    def open(cls, path: Path, *, create: bool = False, read_only: bool = False,
             secrets: Sequence[str] = ()) -> Database:
        path = store_path(path)
        if not path.exists():
            if not create:
                raise FileNotFoundError(f"no run store at {path}")
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            connection = _connect(path, read_only)
            tables = _tables(connection)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path} is damaged or not an SQLite database ({exc}); restore it "
                             "from a backup or start a new run") from None
        database = cls(path, connection, Codec(tuple(secrets)), read_only)
        try:
            database._prepare(tables)
        except sqlite3.DatabaseError as exc:
            connection.close()
            raise StoreError(f"{path} is damaged ({exc}); restore it from a backup or start a "
                             "new run") from None
        except StoreError:
            connection.close()
            raise
        return database

    def _prepare(self, tables: set[str]) -> None:
        version = _version(self._connection, tables)
        if version is None and tables - {"sqlite_sequence"} == LABELS_ONLY:
            tables = set()  # a label cache of an older Cambrian: becomes a store (the table stays)
        if version is None and tables - {"sqlite_sequence"}:
            raise StoreError(f"{self.path} is an SQLite file but not a Cambrian run store (it "
                             f"holds {', '.join(sorted(tables)[:4])}); to analyse a ShinkaEvolve "
                             "or OpenEvolve run use `cambrian trace import`")
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(f"{self.path} was written by a newer Cambrian (store schema "
                             f"{version}; this one reads up to {SCHEMA_VERSION}): upgrade "
                             "Cambrian to open it")
        if self.read_only:
            if version is None or version < SCHEMA_VERSION:
                raise StoreError(f"{self.path} uses store schema {version or 'none'}; open it "
                                 "once without read-only mode to migrate it")
            return
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=NORMAL")
        self._connection.execute("PRAGMA foreign_keys=ON")
        with self.transaction():
            if version is None:  # a new store
                for statement in statements(DDL):
                    self._connection.execute(statement)
                self._connection.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),))
            elif version < SCHEMA_VERSION:
                migrate(self._connection, version)

    def close(self) -> None:
        self._connection.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes atomically; nested uses join the outermost transaction."""
        if self._depth == 0:
            self._connection.execute("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            yield
        except BaseException:
            self._depth -= 1
            if self._depth == 0:
                self._connection.execute("ROLLBACK")
            raise
        self._depth -= 1
        if self._depth == 0:
            self._connection.execute("COMMIT")

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        return self._connection.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> sqlite3.Cursor:
        return self._connection.executemany(sql, rows)

    def one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """The first column of the first row (None when there is no row)."""
        row = self._connection.execute(sql, params).fetchone()
        return row[0] if row else None

    def function(self, name: str, arguments: int, implementation: Any) -> None:
        """Make a deterministic Python function callable from this connection's SQL."""
        self._connection.create_function(name, arguments, implementation, deterministic=True)

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self._connection.execute(f"PRAGMA table_info({table})")]
