"""Cycling: how often an edit adds back lines that were deleted before (seed 001 §5.2, B.6, B.8).

For every parent→child edit the added lines (see :mod:`cambrian.lang.lines`) are compared with
lines deleted earlier, in two scopes:

- **lineage** — deleted by an edit on the child's own ancestry (the edits that produced its
  parent, grandparent, ...). Cambrian's addition: it tells whether *this* line of descent is
  undoing its own history, which is what a deletion-aware filter or prompt can act on.
- **run** — deleted by any earlier edit of the run, on any branch (what EvoReplay measures).

Each match is classified (B.6): *literal* (byte-identical code line), *trivial* (an identical
comment-only line, or a difference only in whitespace or the trailing comment) or *tuning*
(identical once numbers are collapsed to a placeholder, different numbers). The headline share
counts byte-identical re-introductions only (literal plus identical comment lines).
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, Protocol

from cambrian.lang.lines import (
    is_comment_only,
    language_named,
    line_diff,
    loose_key,
    normalise,
    skeleton,
)
from cambrian.trace.ancestry import Ancestry
from cambrian.trace.model import CandidateRecord, Trace


class LineageSource(Protocol):
    """What :func:`lineage_deletions` needs: a Trace, or a store adapter with the same calls."""

    def parent_of(self, candidate_id: str | int) -> str | None: ...

    def source_of(self, candidate_id: str | int) -> str | None: ...


def lineage_deletions(lineage: LineageSource, candidate_id: str | int) -> list[str]:
    """Lines deleted along the candidate's lineage, most recent edit first (the candidate's own
    edit from its parent, then its parent's, ...); each line once, normalised."""
    deleted: list[str] = []
    seen: set[str] = set()
    visited: set[str] = set()
    current: str | None = str(candidate_id)
    while current is not None and current not in visited:
        visited.add(current)
        parent = lineage.parent_of(current)
        if parent is None:
            break
        child_source, parent_source = lineage.source_of(current), lineage.source_of(parent)
        if child_source is not None and parent_source is not None:
            for line in line_diff(parent_source, child_source).deleted:
                if line not in seen:
                    seen.add(line)
                    deleted.append(line)
        current = str(parent)
    return deleted


def reintroduction_share(parent_source: str, child_source: str,
                         deleted_lines: Iterable[str]) -> float:
    """Share of the lines the child adds that are byte-identical (after normalisation) to one
    of ``deleted_lines``; 0.0 when the child adds no counted line."""
    added = line_diff(parent_source, child_source).added
    if not added:
        return 0.0
    deleted = {normalise(line) for line in deleted_lines}
    return sum(line in deleted for line in added) / len(added)


# ---------------------------------------------------------------------------- whole-run analysis


@dataclass(frozen=True)
class RecycleCounts:
    added: int = 0
    reintroduced: int = 0  # byte-identical to a deleted line
    literal: int = 0
    tuning: int = 0
    trivial: int = 0

    @property
    def share(self) -> float | None:
        return self.reintroduced / self.added if self.added else None

    def __add__(self, other: RecycleCounts) -> RecycleCounts:
        return RecycleCounts(self.added + other.added, self.reintroduced + other.reintroduced,
                             self.literal + other.literal, self.tuning + other.tuning,
                             self.trivial + other.trivial)


@dataclass(frozen=True)
class EditCycling:
    child_id: str
    parent_id: str
    iteration: int
    deleted: int
    lineage: RecycleCounts
    run: RecycleCounts
    lineage_spans: tuple[int, ...]
    run_spans: tuple[int, ...]


@dataclass(frozen=True)
class ScopeSummary:
    counts: RecycleCounts
    share: float | None  # pooled: re-introduced / added over the run
    slope: float | None  # least-squares slope of the per-edit share against iteration
    spans: list[int] = field(default_factory=list)
    median_span: float | None = None

    def split(self) -> dict[str, float | None]:
        """Literal / tuning / trivial matches as shares of all added lines."""
        added = self.counts.added
        return {kind: (getattr(self.counts, kind) / added if added else None)
                for kind in ("literal", "tuning", "trivial")}


@dataclass(frozen=True)
class CyclingReport:
    edits: list[EditCycling]
    lineage: ScopeSummary
    run: ScopeSummary

    def to_dict(self) -> dict[str, Any]:
        def scope(summary: ScopeSummary) -> dict[str, Any]:
            return {"share": summary.share, "slope": summary.slope,
                    "median_span": summary.median_span, "counts": asdict(summary.counts),
                    "split": summary.split()}
        return {"edits": len(self.edits), "lineage": scope(self.lineage), "run": scope(self.run)}


def least_squares_slope(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    var_x = sum((x - mean_x) ** 2 for x in xs)
    if var_x == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var_x


@dataclass
class _Occurrences:
    """Where a key was deleted: parallel lists, in edit order."""

    positions: list[int] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    iterations: list[int] = field(default_factory=list)

    def add(self, position: int, child: str, iteration: int) -> None:
        if self.positions and self.positions[-1] == position:
            return  # the same edit deleted this key twice
        self.positions.append(position)
        self.children.append(child)
        self.iterations.append(iteration)


class _DeletionIndex:
    def __init__(self) -> None:
        self.exact: dict[str, _Occurrences] = {}
        self.loose: dict[str, _Occurrences] = {}
        self.skeleton: dict[str, _Occurrences] = {}

    def record(self, position: int, child: str, iteration: int, keys: tuple[str, str, str]) -> None:
        for table, key in zip((self.exact, self.loose, self.skeleton), keys, strict=True):
            table.setdefault(key, _Occurrences()).add(position, child, iteration)


def _nearest_ancestor(occ: _Occurrences | None, position: int, child: str,
                      ancestry: Ancestry) -> int | None:
    """Index into ``occ`` of the nearest deletion on ``child``'s ancestry, or None.

    Ancestors are produced before their descendants, so scanning earlier deletions from the
    latest backwards meets the nearest ancestor first."""
    if occ is None:
        return None
    for index in range(bisect.bisect_left(occ.positions, position) - 1, -1, -1):
        if ancestry.is_ancestor(occ.children[index], child):
            return index
    return None


def _latest_before(occ: _Occurrences | None, position: int) -> int | None:
    if occ is None:
        return None
    index = bisect.bisect_left(occ.positions, position) - 1
    return index if index >= 0 else None


def analyse_cycling(trace: Trace) -> CyclingReport:
    language = language_named(trace.run.language)
    edits: list[tuple[CandidateRecord, CandidateRecord]] = []
    for candidate in trace.evaluated():
        parent_id = trace.parent_of(candidate.id)
        if parent_id is not None and trace.source_of(parent_id) is not None:
            edits.append((candidate, trace.candidate(parent_id)))
    diffs = [line_diff(parent.source or "", child.source or "") for child, parent in edits]
    keys: dict[str, tuple[str, str, str]] = {}

    def keys_of(line: str) -> tuple[str, str, str]:
        if line not in keys:
            keys[line] = (line, loose_key(line, language), skeleton(line, language))
        return keys[line]

    index = _DeletionIndex()
    for position, ((child, _), diff) in enumerate(zip(edits, diffs, strict=True)):
        for line in diff.deleted:
            index.record(position, child.id, child.iteration, keys_of(line))

    ancestry = Ancestry(trace)
    results: list[EditCycling] = []
    for position, ((child, parent), diff) in enumerate(zip(edits, diffs, strict=True)):
        scopes = (
            _Tally(partial(_nearest_ancestor, position=position, child=child.id,
                           ancestry=ancestry)),
            _Tally(partial(_latest_before, position=position)),
        )
        for line in diff.added:
            comment = is_comment_only(line, language)
            for tally in scopes:
                tally.classify(index, keys_of(line), comment, child.iteration)
        lineage, run = scopes
        results.append(EditCycling(
            child_id=child.id, parent_id=parent.id, iteration=child.iteration,
            deleted=len(diff.deleted), lineage=lineage.counts(), run=run.counts(),
            lineage_spans=tuple(lineage.spans), run_spans=tuple(run.spans),
        ))
    return CyclingReport(edits=results, lineage=_summarise(results, "lineage"),
                         run=_summarise(results, "run"))


class _Tally:
    """Counts for one edit in one scope; ``find`` picks the matching earlier deletion."""

    def __init__(self, find: Callable[[_Occurrences | None], int | None]) -> None:
        self.find = find
        self.added = self.reintroduced = self.literal = self.tuning = self.trivial = 0
        self.spans: list[int] = []

    def classify(self, index: _DeletionIndex, keys: tuple[str, str, str], comment: bool,
                 iteration: int) -> None:
        exact, loose, skel = keys
        self.added += 1
        occ = index.exact.get(exact)
        hit = self.find(occ)
        if occ is not None and hit is not None:
            self.reintroduced += 1
            if comment:
                self.trivial += 1
            else:
                self.literal += 1
            self.spans.append(iteration - occ.iterations[hit])
        elif self.find(index.loose.get(loose)) is not None:
            self.trivial += 1
        elif self.find(index.skeleton.get(skel)) is not None:
            self.tuning += 1

    def counts(self) -> RecycleCounts:
        return RecycleCounts(self.added, self.reintroduced, self.literal, self.tuning,
                             self.trivial)


def _summarise(edits: list[EditCycling], scope: str) -> ScopeSummary:
    total = RecycleCounts()
    xs: list[float] = []
    ys: list[float] = []
    spans: list[int] = []
    for edit in edits:
        counts: RecycleCounts = getattr(edit, scope)
        total = total + counts
        if counts.added:
            xs.append(float(edit.iteration))
            ys.append(counts.reintroduced / counts.added)
        spans.extend(getattr(edit, f"{scope}_spans"))
    return ScopeSummary(
        counts=total, share=total.share, slope=least_squares_slope(xs, ys), spans=spans,
        median_span=float(statistics.median(spans)) if spans else None,
    )
