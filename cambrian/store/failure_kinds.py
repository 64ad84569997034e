"""Why candidates failed or were refused, as short phrases: the reasons ``cambrian status``
counts and a self-reflection reads (``cambrian/meta/reflection.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from cambrian.core.outcomes import ProposalOutcome
from cambrian.core.status import CandidateStatus
from cambrian.store.store import Store
from cambrian.store.views import FailureRow


@dataclass(frozen=True)
class FailureKind:
    """Failed or refused candidates of one kind: how many, and the latest one's message."""

    kind: str
    count: int
    latest_id: int
    latest_message: str


# An evaluation's status (or a judge's verdict) -> the reason shown.
_EVALUATION_KINDS = {"timeout": "time limit", "memory": "memory limit", "disk": "disk limit",
                     "crashed": "crash",
                     "invalid_output": "unusable evaluator output",
                     "incorrect": "wrong result (evaluator said incorrect)"}
_VERDICT_KINDS = {"CE": "compile error", "TLE": "time limit", "MLE": "memory limit",
                  "RE": "crash", "WA": "wrong result (evaluator said incorrect)",
                  "OLE": "output limit"}


# A proposal that left no child (its ProposalOutcome, stored in the notes) -> the reason shown.
_PROPOSAL_KINDS = {ProposalOutcome.REPLY_REFUSED: "reply refused",
                   ProposalOutcome.PROMPT_TOO_LARGE: "prompt too large",
                   ProposalOutcome.CALL_FAILED: "LLM call failed",
                   ProposalOutcome.FATAL: "LLM call refused (credentials)"}


def failure_kind(row: FailureRow) -> str:
    """The reason a candidate failed or was refused, as one short phrase."""
    if row.status is CandidateStatus.INCORRECT:
        if row.verdict in _VERDICT_KINDS:
            return _VERDICT_KINDS[str(row.verdict)]
        return _EVALUATION_KINDS.get(row.evaluation_status or "", "evaluation failed")
    if row.status is CandidateStatus.PATCH_FAILED:
        outcome = row.notes.get("outcome")
        if outcome in _PROPOSAL_KINDS:
            return _PROPOSAL_KINDS[outcome]
        # Stores of versions before outcomes were recorded: refusals were marked, the rest not.
        return "reply refused" if row.notes.get("reply_refused") else "LLM call failed"
    if row.status is CandidateStatus.REJECTED:
        if row.notes.get("screened_out"):
            return "screened out before full evaluation"
        return "deletion filter" if row.notes.get("recycled") else "too similar (novelty)"
    return "duplicate program"


def failures_by_kind(store: Store) -> list[FailureKind]:
    """Failed and refused candidates by reason, the most frequent first."""
    latest: dict[str, FailureRow] = {}
    counts: dict[str, int] = {}
    for row in store.views.failure_rows():
        kind = failure_kind(row)
        counts[kind] = counts.get(kind, 0) + 1
        latest[kind] = row
    return [FailureKind(kind, counts[kind], latest[kind].candidate_id,
                        latest[kind].error.strip())
            for kind in sorted(counts, key=lambda k: (-counts[k], k))]
