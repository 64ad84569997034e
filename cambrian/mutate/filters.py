"""Child filters: checks a proposed child must pass before it is stored as pending, run by the
proposer in the order the composition root gives (the deletion filter, then novelty).

A filter may refuse the child (it is stored as ``rejected`` with the reason and the proposal
resamples) or let it pass with notes for the child's row. Once a generation has used up a
filter's rejections, the proposer asks it again with ``enforce=False``: it then records its
notes but refuses nothing (and spends no LLM call on a verdict that would not be used).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from cambrian.core.outcomes import ProposalOutcome


@dataclass(frozen=True)
class ProposedChild:
    """A child program made from a reply, before the filters have seen it."""

    source: str
    description: str
    parent_id: int
    parent_source: str
    parent_correct: bool
    island: int
    kind: str  # the mutation kind: diff, full, cross, fix


@dataclass(frozen=True)
class FilterVerdict:
    reason: str | None = None  # why the child is refused; None: it passes
    notes: dict[str, Any] = field(default_factory=dict)  # stored in the child's notes
    outcome: ProposalOutcome = ProposalOutcome.REJECTED  # what a refusal counts as

    @property
    def refused(self) -> bool:
        return self.reason is not None


class ChildFilter(Protocol):
    name: str  # also the key of its allowance: rejections per generation

    async def check_child(self, child: ProposedChild, enforce: bool) -> FilterVerdict:
        """The verdict on ``child``; with ``enforce=False`` it never refuses."""
        ...

    def accepted(self, candidate_id: int, child: ProposedChild, verdict: FilterVerdict) -> None:
        """The child passed every filter and was stored as ``candidate_id``."""
        ...
