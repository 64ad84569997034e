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

from cambrian.lang.lines import line_diff
from cambrian.store.rows import Ancestor
from cambrian.store.store import Store

__all__ = ["Ancestor", "LineageEdit", "ancestry", "lineage_edits", "run_facts", "sources"]

MAX_CACHED_EDITS = 200_000


@dataclass(frozen=True)
class LineageEdit:
    child: Ancestor
    parent: Ancestor
    deleted: tuple[str, ...]  # normalised counted lines, in file order


_deleted_by_edit: OrderedDict[tuple[str, int], tuple[str, ...]] = OrderedDict()


def run_facts(store: Store) -> tuple[str, str, bool]:
    """(cache key of this run, its language, whether it maximises)."""
    identity = store.runs.identity()
    if identity is None:
        return str(store.path), "", True
    run_id, language, direction = identity
    return f"{store.path}|{run_id}", language, direction != "minimize"


def ancestry(store: Store, candidate_id: int | str) -> list[Ancestor]:
    """The candidate, its parent, ... up to the root (a malformed cycle is cut where it
    closes; an unknown id gives an empty list)."""
    return store.lineage.ancestry(int(candidate_id))


def sources(store: Store, ids: set[int]) -> dict[int, str | None]:
    return store.candidates.sources(ids)


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
