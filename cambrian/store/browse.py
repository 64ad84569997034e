"""The program browser's queries: a page of a run's candidates, filtered, searched and sorted
in SQL (no program text is read back), and the values its filters offer. A run of tens of
thousands of candidates answers in milliseconds because only one page of rows leaves SQLite."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cambrian.core.status import CandidateStatus
from cambrian.store.database import Database

FAILED_STATUSES = ("incorrect", "patch_failed", "rejected", "screened", "duplicate")
REASON_CHARS = 1000  # the start of an error that its reason is taken from
_NUMBERS = re.compile(r"\d+(\.\d+)?")
# What a page may be sorted by -> the SQL expression.
SORTS: dict[str, str] = {
    "id": "c.id", "score": "c.score", "status": "c.status", "intent": "intent",
    "model": "c.model", "island": "c.island", "generation": "c.generation",
    "parent": "c.parent_id", "reason": "c.error", "operator": "c.operator",
}


def failure_reason(status: str, error: str | None) -> str:
    """A failure's reason as the overview groups them: the first line of the start of its
    error, numbers blanked ("too similar to program N (cosine N)")."""
    first = ((error or "")[:REASON_CHARS].strip().splitlines() or [""])[0]
    return _NUMBERS.sub("N", first) if first else f"({status}, no message)"


@dataclass(frozen=True)
class BrowseQuery:
    """Which candidates, in which order, which page. Empty fields filter nothing."""

    statuses: tuple[str, ...] = ()
    intent: str = ""
    model: str = ""
    island: int | None = None
    generation_min: int | None = None
    generation_max: int | None = None
    parent: int | None = None
    reason: str = ""  # a failure reason as ``failure_reason`` writes it
    search: str = ""  # text in the error, description, intent, model or program
    sort: str = "id"
    descending: bool = False
    offset: int = 0
    limit: int = 100


@dataclass(frozen=True)
class BrowseRow:
    id: int
    parent_id: int | None
    status: CandidateStatus
    score: float | None
    intent: str
    model: str
    island: int | None
    generation: int
    operator: str
    error: str  # the first line of the start of its error
    reason: str  # that line as failures are grouped ("" for a candidate that did not fail)
    reply_refused: bool
    created_at: float


@dataclass(frozen=True)
class BrowsePage:
    rows: list[BrowseRow]
    total: int  # candidates matching the filters


@dataclass(frozen=True)
class BrowseFacets:
    """The values the browser's filters offer, with how many candidates have each."""

    statuses: dict[str, int] = field(default_factory=dict)
    intents: dict[str, int] = field(default_factory=dict)
    models: dict[str, int] = field(default_factory=dict)
    islands: list[int] = field(default_factory=list)
    generations: tuple[int, int] = (0, 0)


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Browse:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.function("cambrian_reason", 2, failure_reason)

    def _where(self, query: BrowseQuery) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if query.statuses:
            clauses.append(f"c.status IN ({','.join('?' * len(query.statuses))})")
            params.extend(query.statuses)
        if query.intent:
            clauses.append("json_extract(c.notes_json, '$.intent') = ?")
            params.append(query.intent)
        if query.model:
            clauses.append("c.model = ?")
            params.append(query.model)
        if query.island is not None:
            clauses.append("c.island = ?")
            params.append(query.island)
        if query.generation_min is not None:
            clauses.append("c.generation >= ?")
            params.append(query.generation_min)
        if query.generation_max is not None:
            clauses.append("c.generation <= ?")
            params.append(query.generation_max)
        if query.parent is not None:
            clauses.append("c.parent_id = ?")
            params.append(query.parent)
        if query.reason:
            clauses.append(f"c.status IN {FAILED_SQL} AND cambrian_reason(c.status, c.error) = ?")
            params.append(query.reason)
        if query.search:
            pattern = _like(query.search)
            clause = (
                "(c.error LIKE ?1 ESCAPE '\\' OR c.description LIKE ?1 ESCAPE '\\' "
                "OR c.model LIKE ?1 ESCAPE '\\' OR c.operator LIKE ?1 ESCAPE '\\' "
                "OR json_extract(c.notes_json, '$.intent') LIKE ?1 ESCAPE '\\' "
                "OR c.source LIKE ?1 ESCAPE '\\' OR EXISTS (SELECT 1 FROM candidate_files f "
                "JOIN blobs b ON b.sha256 = f.sha256 WHERE f.candidate_id = c.id "
                "AND (b.text LIKE ?1 ESCAPE '\\' OR f.path LIKE ?1 ESCAPE '\\')))"
                .replace("?1", "?"))
            clauses.append(clause)
            params.extend([pattern] * clause.count("?"))
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def page(self, query: BrowseQuery) -> BrowsePage:
        """One page of the candidates ``query`` selects, and how many it selects."""
        if query.sort not in SORTS:
            raise ValueError(f"cannot sort by {query.sort!r}; sort by one of {', '.join(SORTS)}")
        where, params = self._where(query)
        total = int(self._db.one(f"SELECT COUNT(*) FROM candidates c{where}", params))
        order = "DESC" if query.descending else "ASC"
        column = SORTS[query.sort]
        rows = self._db.execute(
            "SELECT c.id, c.parent_id, c.status, c.score, "
            "json_extract(c.notes_json, '$.intent') AS intent, c.model, c.island, c.generation, "
            f"c.operator, substr(c.error, 1, {REASON_CHARS}), "
            "json_extract(c.notes_json, '$.reply_refused'), c.created_at "
            f"FROM candidates c{where} ORDER BY ({column} IS NULL), {column} {order}, "
            f"c.id {order} LIMIT ? OFFSET ?", [*params, query.limit, query.offset])
        found = []
        for i, p, s, score, intent, model, island, g, op, error, refused, at in rows:
            status = CandidateStatus(s)
            first = ((error or "").strip().splitlines() or [""])[0]
            found.append(BrowseRow(
                int(i), p, status, score, str(intent or ""), str(model or ""), island, int(g),
                str(op), first, failure_reason(s, error) if s in FAILED_STATUSES else "",
                bool(refused), float(at)))
        return BrowsePage(found, total)

    def facets(self) -> BrowseFacets:
        def counted(sql: str) -> dict[str, int]:
            return {str(v): int(n) for v, n in self._db.execute(sql) if v is not None}

        low, high = self._db.execute(
            "SELECT MIN(generation), MAX(generation) FROM candidates").fetchone()
        return BrowseFacets(
            statuses=counted("SELECT status, COUNT(*) FROM candidates GROUP BY status"),
            intents=counted("SELECT json_extract(notes_json, '$.intent') AS i, COUNT(*) "
                            "FROM candidates GROUP BY i ORDER BY i"),
            models=counted("SELECT model, COUNT(*) FROM candidates GROUP BY model ORDER BY model"),
            islands=[int(i) for (i,) in self._db.execute(
                "SELECT DISTINCT island FROM candidates WHERE island IS NOT NULL ORDER BY island")],
            generations=(int(low or 0), int(high or 0)))


FAILED_SQL = "(" + ",".join(f"'{s}'" for s in FAILED_STATUSES) + ")"
