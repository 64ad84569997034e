"""Whole tables as rows of column values, for trace export and import: a Cambrian run exported
and imported again must give byte-identical tables, so rows go in with their original ids and
timestamps. Table and column names are checked against the schema."""

from __future__ import annotations

from typing import Any

from cambrian.store.database import Database

TRACE_TABLES = ("runs", "environments", "contexts", "candidates", "evaluations", "edges")


class RawRows:
    def __init__(self, db: Database) -> None:
        self._db = db

    def _check(self, table: str, columns: list[str]) -> None:
        if table not in TRACE_TABLES:
            raise ValueError(f"raw rows are only for the trace tables {TRACE_TABLES}, not {table!r}")
        unknown = set(columns) - set(self._db.columns(table))
        if unknown:
            raise ValueError(f"table {table} has no column(s) {sorted(unknown)}")

    def read(self, table: str, order_by: str = "rowid") -> list[dict[str, Any]]:
        columns = self._db.columns(table)
        self._check(table, [order_by] if order_by != "rowid" else [])
        return [dict(zip(columns, row)) for row in
                self._db.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order_by}")]

    def insert(self, table: str, row: dict[str, Any], ignore_duplicates: bool = False) -> None:
        columns = list(row)
        self._check(table, columns)
        verb = "INSERT OR IGNORE" if ignore_duplicates else "INSERT"
        self._db.execute(f"{verb} INTO {table}({', '.join(columns)}) "
                         f"VALUES ({','.join('?' * len(columns))})",
                         tuple(row[c] for c in columns))
