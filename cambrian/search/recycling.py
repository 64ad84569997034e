"""Deletion-aware search (seed 001 §5.2 and §6): the cycling analysis fed back into the loop.

Lineages keep re-introducing lines they deleted a few iterations earlier (§5.2, B.8). Two
interventions act on that, both configured in ``trace_feedback``:

- the **deletion filter** checks every proposal before it is evaluated: the share of the lines
  the child adds that its lineage already deleted (byte-identical after the cycling analysis's
  normalisation; comment-only and one-word lines never count as deletions). Above
  ``reintroduction_threshold`` the child is *rejected* (stored as ``rejected`` with the lines
  and the programs that deleted them, never evaluated; the generation resamples) or
  *penalised* (evaluated, but drawn less often as a parent: :class:`PenalisedParents`);
- the **deletion history** of the parent's lineage goes into the mutation prompt as one note,
  the last and so the first one the prompt builder drops when the context window is tight.

Both read the lineage straight from the run store through ``cambrian/trace/deletion_index.py``
(one recursive query for the chain; each edit's deleted lines computed once per process), so a
check costs a few milliseconds (``benchmarks/trace_speed.py``: about 2 ms per check and 1.5 ms
per note over the last 1,000 edits of a 2,000-edit synthetic run, lineages ~150 deep, on two
busy cores). Everything they decide is a function of stored rows, so a resumed run decides the
same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cambrian.config import TraceFeedbackConfig
from cambrian.core.outcomes import ProposalOutcome
from cambrian.lang.lines import line_diff
from cambrian.mutate.filters import FilterVerdict, ProposedChild
from cambrian.search.algorithm import ParentSample, Selector
from cambrian.store.store import Store
from cambrian.trace.deletion import deletion_history_text, is_trivial
from cambrian.trace.deletion_index import ancestry, lineage_edits

MAX_LINES_IN_REASON = 3
MAX_REASON_LINE_CHARS = 80


@dataclass(frozen=True)
class RecyclingVerdict:
    share: float  # re-introduced lines / counted added lines (0.0 when nothing is added)
    added: int
    reintroduced: tuple[tuple[str, int], ...]  # (line, the program whose edit deleted it)
    action: str  # "keep" | "reject" | "penalise"
    reason: str = ""

    def notes(self) -> dict[str, Any]:
        """What the child's stored notes record about it."""
        notes: dict[str, Any] = {"reintroduction_share": round(self.share, 4),
                                 "reintroduced_lines": len(self.reintroduced)}
        if self.action != "keep":
            notes["recycled"] = self.action
        return notes


class DeletionFilter:
    """A child filter (``cambrian/mutate/filters.py``) named ``deletion``."""

    name = "deletion"

    def __init__(self, settings: TraceFeedbackConfig, store: Store, language: str) -> None:
        self.settings = settings
        self.store = store
        self.language = language
        self._penalised: dict[int, bool] = {}

    def deleted_in_lineage(self, candidate_id: int) -> dict[str, int]:
        """Non-trivial lines deleted on ``candidate_id``'s line of descent (its own edit
        included), each with the program whose edit deleted it most recently."""
        deleted: dict[str, int] = {}
        for edit in lineage_edits(self.store, ancestry(self.store, candidate_id)):
            for line in edit.deleted:  # edits come most recent first: keep the first seen
                if line not in deleted and not is_trivial(line, self.language):
                    deleted[line] = edit.child.id
        return deleted

    def check(self, parent_id: int, parent_source: str, child_source: str) -> RecyclingVerdict:
        added = line_diff(parent_source, child_source).added
        deleted = self.deleted_in_lineage(parent_id) if added else {}
        again = tuple((line, deleted[line]) for line in added if line in deleted)
        share = len(again) / len(added) if added else 0.0
        if share <= self.settings.reintroduction_threshold:
            return RecyclingVerdict(share, len(added), again, "keep")
        distinct = dict(again)  # in the order the child adds them
        listed = [f"`{_clip(line.strip())}` (deleted by program {by})"
                  for line, by in list(distinct.items())[:MAX_LINES_IN_REASON]]
        more = len(distinct) - len(listed)
        reason = (f"re-introduces lines its lineage already deleted: {len(again)} of the "
                  f"{len(added)} lines it adds ({share:.0%}, above the "
                  f"{self.settings.reintroduction_threshold:.0%} threshold): "
                  + "; ".join(listed) + (f"; and {more} more" if more > 0 else ""))
        return RecyclingVerdict(share, len(added), again, self.settings.deletion_filter, reason)

    async def check_child(self, child: ProposedChild, enforce: bool) -> FilterVerdict:
        """Nothing to say when the generation used up its rejections (``enforce`` false), for
        a fix, or when the parent fails (re-adding what a breaking edit removed is a legitimate
        repair)."""
        if not enforce or child.kind == "fix" or not child.parent_correct:
            return FilterVerdict()
        verdict = self.check(child.parent_id, child.parent_source, child.source)
        reason = verdict.reason if verdict.action == "reject" else None
        return FilterVerdict(reason, verdict.notes(), ProposalOutcome.RECYCLED)

    def accepted(self, candidate_id: int, child: ProposedChild, verdict: FilterVerdict) -> None:
        return None

    def is_penalised(self, candidate_id: int) -> bool:
        if candidate_id not in self._penalised:  # notes are written once, with the candidate
            row = self.store.candidates.find(candidate_id)
            notes = row.notes if row is not None else {}
            self._penalised[candidate_id] = notes.get("recycled") == "penalise"
        return self._penalised[candidate_id]


def _clip(text: str) -> str:
    return text if len(text) <= MAX_REASON_LINE_CHARS else text[:MAX_REASON_LINE_CHARS - 3] + "..."


def build_deletion_filter(settings: TraceFeedbackConfig, store: Store,
                          language: str) -> DeletionFilter | None:
    return None if settings.deletion_filter == "off" else DeletionFilter(settings, store, language)


class PenalisedParents:
    """The selector as proposals see it under ``deletion_filter: penalise``: when a draw names
    a penalised program as the parent, the draw is repeated with probability ``penalty`` (the
    second draw stands). Draws that name no penalised program consume no extra randomness, so
    a run without penalised programs samples exactly as it would without the filter."""

    def __init__(self, selector: Selector, deletion_filter: DeletionFilter) -> None:
        self._selector = selector
        self._filter = deletion_filter

    def sample(self, rng: np.random.Generator) -> ParentSample | None:
        sample = self._selector.sample(rng)
        penalty = self._filter.settings.penalty
        if sample is None or penalty <= 0 or not self._filter.is_penalised(sample.parent_id):
            return sample
        if rng.random() >= penalty:
            return sample
        return self._selector.sample(rng) or sample

    def __getattr__(self, name: str) -> Any:
        return getattr(self._selector, name)


def parent_view(selector: Selector, deletion_filter: DeletionFilter | None) -> Any:
    """``selector`` itself, or wrapped in :class:`PenalisedParents` when the filter penalises."""
    if deletion_filter is not None and deletion_filter.settings.deletion_filter == "penalise":
        return PenalisedParents(selector, deletion_filter)
    return selector


def deletion_history_note(store: Store, settings: TraceFeedbackConfig,
                          parent_id: int) -> tuple[tuple[str, ...], dict[str, Any]]:
    """(notes, tags): the parent's lineage deletion history as one prompt note, or nothing when
    it is off or the lineage deleted nothing the parent lacks. Requests put it last, so the
    prompt builder drops it first when the context window is tight."""
    if not settings.deletion_history_in_prompt:
        return (), {}
    text = deletion_history_text(store, parent_id, max_lines=settings.deletion_history_lines,
                                 as_note=True)
    return ((text,), {"deletion_history": True}) if text else ((), {})
