"""Edges (parent -> child, inspiration -> child) and ancestor chains."""

from __future__ import annotations

from cambrian.store.database import Database
from cambrian.store.rows import Ancestor

_CHAIN = """
WITH RECURSIVE chain(id, depth) AS (
    SELECT id, 0 FROM candidates WHERE id = :start
    UNION ALL
    SELECT c.parent_id, chain.depth + 1 FROM candidates c JOIN chain ON c.id = chain.id
    WHERE c.parent_id IS NOT NULL AND chain.depth < :bound
)
SELECT c.id, c.parent_id, c.score, c.status
FROM chain JOIN candidates c ON c.id = chain.id ORDER BY chain.depth
"""


class Lineage:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add_edge(self, parent_id: int, child_id: int, kind: str, operator: str) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO edges(parent_id, child_id, kind, operator) VALUES (?,?,?,?)",
            (parent_id, child_id, kind, operator))

    def edges(self, child_id: int | None = None) -> list[tuple[int, int, str, str]]:
        """(parent, child, kind, operator) rows, of one child or all, in insertion order."""
        if child_id is None:
            return [tuple(r) for r in self._db.execute(  # type: ignore[misc]
                "SELECT parent_id, child_id, kind, operator FROM edges ORDER BY rowid")]
        return [tuple(r) for r in self._db.execute(  # type: ignore[misc]
            "SELECT parent_id, child_id, kind, operator FROM edges WHERE child_id=? ORDER BY rowid",
            (child_id,))]

    def ancestry(self, candidate_id: int) -> list[Ancestor]:
        """The candidate, its parent, ... up to the root, without program text (a malformed
        cycle is cut where it closes; an unknown id gives an empty list)."""
        bound = self._db.one("SELECT MAX(id) FROM candidates") or 0
        chain: list[Ancestor] = []
        seen: set[int] = set()
        for row in self._db.execute(_CHAIN, {"start": int(candidate_id), "bound": bound}):
            if row[0] in seen:
                break
            seen.add(row[0])
            chain.append(Ancestor(row[0], row[1], row[2], row[3] == "correct"))
        return chain
