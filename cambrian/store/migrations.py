"""Numbered schema migrations: a store written by an older Cambrian is brought to the current
schema when it is opened (in one transaction, so a failure leaves it as it was).

Migration N takes a store at schema N-1 to schema N. Each is written to be safe on stores that
already have part of what it adds (side tables used to be created on first use).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from cambrian.store.schema import (
    EMBEDDINGS_INDEX_DDL,
    PROGRAM_FILES_DDL,
    RESUME_DDL,
    SIDE_TABLES_DDL,
    statements,
)

SCHEMA_VERSION = 5
ALGORITHM_HOOKS = "algorithm hooks"  # the name cambrian.search.hooks.AlgorithmHooks saves under


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in connection.execute(f"PRAGMA table_info({table})")}


def _add_column(connection: sqlite3.Connection, table: str, column: str, spec: str) -> None:
    if column not in _columns(connection, table):
        connection.execute(f"ALTER TABLE {table} ADD COLUMN {column} {spec}")


def _to_2(connection: sqlite3.Connection) -> None:
    """Side tables into the schema (guidance, system prompts, edit labels, control requests);
    where an evaluation ran; how much of a reply was cut; events indexed by kind."""
    for statement in statements(SIDE_TABLES_DDL):
        connection.execute(statement)
    _add_column(connection, "guidance", "target", "TEXT NOT NULL DEFAULT ''")
    _add_column(connection, "contexts", "response_dropped_chars", "INTEGER NOT NULL DEFAULT 0")
    _add_column(connection, "evaluations", "worker", "TEXT NOT NULL DEFAULT 'local'")
    connection.execute("CREATE INDEX IF NOT EXISTS idx_events_kind ON events(kind)")
    # Hook states are kept per hook name now; schema 1 held only the algorithm's hooks.
    row = connection.execute("SELECT value FROM search_state WHERE key='hooks'").fetchone()
    if row is not None and json.loads(row[0]):
        connection.execute("UPDATE search_state SET value=? WHERE key='hooks'",
                           (json.dumps({ALGORITHM_HOOKS: json.loads(row[0])}, sort_keys=True),))


def _to_3(connection: sqlite3.Connection) -> None:
    """Programs of several files: the blob and manifest tables (older candidates keep their
    one-file source where it is)."""
    for statement in statements(PROGRAM_FILES_DDL):
        connection.execute(statement)


def _to_4(connection: sqlite3.Connection) -> None:
    """The resume snapshot's table; indexes for the newest generation and the best score."""
    for statement in statements(RESUME_DDL):
        connection.execute(statement)


def _to_5(connection: sqlite3.Connection) -> None:
    """The embeddings indexed by model and candidate (the novelty index's files are checked
    against their count on resume)."""
    for statement in statements(EMBEDDINGS_INDEX_DDL):
        connection.execute(statement)


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {2: _to_2, 3: _to_3, 4: _to_4,
                                                               5: _to_5}


def migrate(connection: sqlite3.Connection, version: int) -> None:
    """Apply migrations version+1 .. SCHEMA_VERSION (the caller holds a transaction)."""
    for target in range(version + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[target](connection)
        connection.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(target),))
