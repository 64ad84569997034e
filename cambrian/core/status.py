"""One candidate-status type for the store, the trace model, ``cambrian status`` and the report."""

from __future__ import annotations

from enum import StrEnum


class CandidateStatus(StrEnum):
    """What became of a proposed program. A ``StrEnum``: stored as its value, equal to it."""

    PENDING = "pending"  # stored, waiting for (or under) evaluation
    CORRECT = "correct"  # evaluated, the evaluator accepted it and gave a score
    INCORRECT = "incorrect"  # evaluated, failed (wrong, crashed, timed out...)
    SCREENED = "screened"  # stopped at a tiered evaluation's quick stage: no full-set score
    DUPLICATE = "duplicate"  # the same program as an earlier candidate; not evaluated again
    REJECTED = "rejected"  # a valid program refused before evaluation (novelty, filters)
    PATCH_FAILED = "patch_failed"  # the reply could not be used (or the call failed)

    @property
    def evaluated(self) -> bool:
        """Whether a committed evaluation spent a generation of the budget on it."""
        return self in EVALUATED


EVALUATED: frozenset[CandidateStatus] = frozenset(
    {CandidateStatus.CORRECT, CandidateStatus.INCORRECT, CandidateStatus.SCREENED})
# In the order ``cambrian status`` lists them.
ALL_STATUSES: tuple[CandidateStatus, ...] = tuple(CandidateStatus)
