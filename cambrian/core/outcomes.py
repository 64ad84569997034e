"""Outcome enums: what became of one proposal, and why a run stopped (with its exit code)."""

from __future__ import annotations

from enum import Enum, StrEnum


class ProposalOutcome(StrEnum):
    """What one proposal attempt (one conversation with the model) ended in."""

    CHILD = "child"  # a pending child was stored
    REPLY_REFUSED = "reply_refused"  # the model answered, but no attempt gave a usable program
    PROMPT_TOO_LARGE = "prompt_too_large"
    CALL_FAILED = "call_failed"  # the provider failed after its retries (transient)
    FATAL = "fatal"  # an error no later call can escape (the key is rejected): the run stops
    BUDGET = "budget"  # a budget cap forbade the call
    REJECTED = "rejected"  # a valid program refused by a child filter (novelty, ...)
    RECYCLED = "recycled"  # refused for re-adding what its lineage deleted


class CallFailure(StrEnum):
    """How a provider call failed, as the gateway classifies it."""

    TRANSIENT = "transient"  # timeouts, rate limits, 5xx: retried, then given up
    # The request is wrong: retrying it cannot help, but another request may pass (HTTP 400 on
    # one prompt): that proposal fails and the run goes on; if every request is refused, the
    # stall rule stops the run (every recent call failed: exit 5).
    BAD_REQUEST = "bad_request"
    AUTH = "auth"  # missing or rejected credentials
    CONTEXT_OVERFLOW = "context_overflow"  # the prompt does not fit the window
    MALFORMED_REPLY = "malformed_reply"  # the server answered with something unreadable
    UNREACHABLE = "unreachable"  # nothing answers at the address

    @property
    def fatal(self) -> bool:
        """Whether the run cannot go on with this model (every later call would fail too)."""
        return self is CallFailure.AUTH


class RunOutcome(Enum):
    """Why a run stopped, with the process exit code ``cambrian run``/``resume`` return."""

    COMPLETED = ("completed", 0)  # the generation budget was spent
    STOPPED = ("stopped", 0)  # a person asked it to stop (web UI, API); resume continues it
    TARGET_REACHED = ("target_reached", 0)  # the best score reached evolution.target_score
    NO_IMPROVEMENT = ("no_improvement", 0)  # evolution.patience evaluations without a better best
    BUDGET_REACHED = ("budget_reached", 3)  # a budget.* cap (money, tokens, calls, time)
    NOTHING_EVALUATED = ("nothing_evaluated", 4)  # no program could be evaluated / generated
    LLM_UNREACHABLE = ("llm_unreachable", 5)  # the model did not answer or refused every call
    STALLED = ("stalled", 6)  # proposals kept producing no usable program; the run stopped early
    TASK_CHANGED = ("task_changed", 7)  # a task file changed during the run (a candidate?)
    INTERRUPTED = ("interrupted", 130)  # Ctrl-C or SIGTERM; resume continues it
    FAILED = ("failed", 1)  # an error (a damaged store, a bug): the message says which

    def __init__(self, word: str, exit_code: int) -> None:
        self.word = word
        self.exit_code = exit_code

    @classmethod
    def from_word(cls, word: str) -> RunOutcome | None:
        return next((o for o in cls if o.word == word), None)
