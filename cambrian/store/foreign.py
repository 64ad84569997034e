"""Reading another framework's SQLite file (ShinkaEvolve's ``programs.sqlite``), read-only:
the store is the only code that speaks SQL, for Cambrian's own file and for foreign ones."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read_table(db_file: Path, table: str) -> list[dict[str, Any]]:
    """Every row of ``table`` as a dict of its columns (whatever columns this version of the
    foreign schema has). The file is opened read-only and never changed."""
    if not _NAME.fullmatch(table):
        raise ValueError(f"not a table name: {table!r}")
    connection = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in connection.execute(f"SELECT * FROM {table}")]  # noqa: S608
    finally:
        connection.close()
