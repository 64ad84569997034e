"""The result of applying an LLM reply, and the error raised when a reply cannot be applied."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

TRUNCATED_FENCE_MESSAGE = "the reply was cut off before the closing ```"


class RefusalKind(StrEnum):
    """Why a reply was refused, as the retry logic needs to know it."""

    MALFORMED = "malformed"  # not in the reply format, or it does not fit the program
    NO_CHANGE = "no_change"  # it gives back the parent's code (or code that behaves the same)
    DUPLICATE = "duplicate"  # it gives back a program the run already has
    SYNTAX = "syntax"  # the child program does not compile
    OUTSIDE_BLOCKS = "outside_blocks"  # it changes code outside the EVOLVE-BLOCKs

    @property
    def repeats_code(self) -> bool:
        """The reply gave back code the run already has: the next attempt restarts."""
        return self in (RefusalKind.NO_CHANGE, RefusalKind.DUPLICATE)


class PatchError(ValueError):
    """A reply could not be applied. The message is written to be shown to the LLM as-is."""

    def __init__(self, message: str, *, truncated: bool = False,
                 kind: RefusalKind = RefusalKind.MALFORMED) -> None:
        super().__init__(message)
        self.message = message
        # True when the reply looks cut off (e.g. by the token limit) rather than wrong.
        self.truncated = truncated
        self.kind = kind


@dataclass(frozen=True)
class PatchResult:
    source: str  # the complete child program
    description: str  # the reply's one-line summary of the change ("" when it gave none)
    n_edits: int  # SEARCH/REPLACE blocks, functions, or changed blocks, depending on the format
    notes: list[str] = field(default_factory=list)  # harmless oddities worth keeping in the trace
