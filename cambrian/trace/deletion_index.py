"""A candidate's ancestry read from a run store, with the lines each edit on it deleted.

The engine asks for this once per proposal, and lineages grow to hundreds of edits, so two
things keep it cheap: the chain of ancestors comes from one recursive query that reads no
program text, and the deleted lines of each parent→child edit are computed once per process and
cached. Caching is safe because a stored candidate's parent and source never change.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from itertools import pairwise

from cambrian.store.store import Store
from cambrian.trace.lines import line_diff

MAX_CACHED_EDITS = 200_000
_QUERY_CHUNK = 500  # below SQLite's bound-parameter limit

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


@dataclass(frozen=True)
class Ancestor:
    id: int
    parent_id: int | None
    score: float | None
    correct: bool


@dataclass(frozen=True)
class LineageEdit:
    child: Ancestor
    parent: Ancestor
    deleted: tuple[str, ...]  # normalised counted lines, in file order


_deleted_by_edit: OrderedDict[tuple[str, int], tuple[str, ...]] = OrderedDict()


def run_facts(store: Store) -> tuple[str, str, bool]:
    """(cache key of this run, its language, whether it maximises)."""
    row = store.execute("SELECT id, language, direction FROM runs LIMIT 1").fetchone()
    if row is None:
        return str(store.path), "", True
    return f"{store.path}|{row[0]}", str(row[1] or ""), row[2] != "minimize"


def ancestry(store: Store, candidate_id: int | str) -> list[Ancestor]:
    """The candidate, its parent, ... up to the root (a malformed cycle is cut where it
    closes; an unknown id gives an empty list)."""
    bound = store.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]
    chain: list[Ancestor] = []
    seen: set[int] = set()
    for row in store.execute(_CHAIN, {"start": int(candidate_id), "bound": bound}):
        if row[0] in seen:
            break
        seen.add(row[0])
        chain.append(Ancestor(row[0], row[1], row[2], row[3] == "correct"))
    return chain


def sources(store: Store, ids: set[int]) -> dict[int, str | None]:
    found: dict[int, str | None] = {}
    ordered = sorted(ids)
    for start in range(0, len(ordered), _QUERY_CHUNK):
        chunk = ordered[start:start + _QUERY_CHUNK]
        rows = store.execute(f"SELECT id, source FROM candidates WHERE id IN "
                             f"({','.join('?' * len(chunk))})", tuple(chunk))
        found.update({int(i): s for i, s in rows})
    return found


def lineage_edits(store: Store, chain: list[Ancestor]) -> list[LineageEdit]:
    """The edits along ``chain`` (most recent first), each with the lines it deleted."""
    key = run_facts(store)[0]
    pairs = list(pairwise(chain))
    missing = [(child, parent) for child, parent in pairs
               if (key, child.id) not in _deleted_by_edit]
    if missing:
        texts = sources(store, {c.id for c, _ in missing} | {p.id for _, p in missing})
        for child, parent in missing:
            child_source, parent_source = texts.get(child.id), texts.get(parent.id)
            _deleted_by_edit[(key, child.id)] = (
                line_diff(parent_source, child_source).deleted
                if child_source is not None and parent_source is not None else ())
        while len(_deleted_by_edit) > MAX_CACHED_EDITS:
            _deleted_by_edit.popitem(last=False)
    return [LineageEdit(child, parent, _deleted_by_edit[(key, child.id)])
            for child, parent in pairs]
