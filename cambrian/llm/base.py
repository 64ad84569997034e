"""The one interface every LLM provider implements, and the data that crosses it.

A provider turns an :class:`LLMRequest` into an :class:`LLMResponse`. Retries, the cost ledger
and the choice between models live outside the providers (see ``retry.py``, ``pricing.py`` and
``ensemble.py``), so a provider only speaks its wire protocol and maps its errors onto the
exception classes below.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant"]
FinishReason = Literal["stop", "length", "error", "other"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class GenerationParams:
    """Sampling parameters for one call.

    ``grammar`` is a GBNF grammar string; only the local llama.cpp provider honours it, remote
    providers ignore it (their format is enforced by parsing and Reflexion retries instead).
    ``stop`` sequences end generation early, e.g. right after a closing code fence.
    """

    temperature: float = 0.7
    max_tokens: int = 1024
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    grammar: str | None = None
    seed: int | None = None


@dataclass(frozen=True)
class LLMRequest:
    messages: tuple[Message, ...]
    params: GenerationParams = field(default_factory=GenerationParams)

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": [asdict(m) for m in self.messages],
            "params": asdict(self.params),
        }


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Prompt tokens served from a cache (llama.cpp prefix reuse, OpenAI/Anthropic prompt caching).
    cached_prompt_tokens: int = 0


@dataclass(frozen=True)
class LLMResponse:
    text: str
    model: str
    usage: Usage
    finish_reason: FinishReason
    latency_s: float
    cost_usd: float = 0.0
    # False when the model's prices are unknown: cost_usd is then 0, not a real figure.
    cost_known: bool = True

    @property
    def truncated(self) -> bool:
        """True when the reply stopped because it hit the token limit."""
        return self.finish_reason == "length"


class LLMError(Exception):
    """Base class for provider failures. ``retryable`` tells the retry policy what to do;
    ``latency_s`` is how long the attempt that raised it took (set by the retry wrapper)."""

    retryable: bool = False
    latency_s: float | None = None


class LLMTimeout(LLMError):
    retryable = True


class LLMRateLimited(LLMError):
    retryable = True

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class LLMUnavailable(LLMError):
    """Connection refused, 5xx, overloaded: worth retrying with backoff."""

    retryable = True


class LLMUnreachable(LLMUnavailable):
    """Nothing answers at the model's address (connection refused, unknown host)."""


class LLMMalformedReply(LLMUnavailable):
    """The server answered with a body that is not the protocol's (invalid JSON, no choices).
    Retried: a proxy or an overloaded server sends such bodies now and then."""


class LLMBadRequest(LLMError):
    """The request itself is wrong (4xx other than 429): retrying the same request cannot help."""


class LLMAuthError(LLMBadRequest):
    """Missing or rejected credentials."""


class ContextOverflow(LLMBadRequest):
    """The prompt does not fit the model's context window."""


@runtime_checkable
class LLMProvider(Protocol):
    """What the rest of Cambrian needs from a model."""

    @property
    def model(self) -> str:
        """The model identifier as the provider knows it (recorded in the ledger)."""
        ...

    @property
    def context_window(self) -> int | None:
        """Tokens the model accepts (prompt + reply), or None when unknown."""
        ...

    def count_tokens(self, text: str) -> int:
        """Token count of ``text``; exact for local models, an estimate for remote ones."""
        ...

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """Run one call. Raises an :class:`LLMError` subclass on failure."""
        ...


def estimate_tokens(text: str) -> int:
    """A conservative token estimate for models whose tokenizer we do not have locally.

    Code tokenises at roughly 3-4 characters per token with BPE vocabularies; dividing by 3
    over-estimates slightly, which is the safe side when fitting prompts into a window.
    """
    return max(1, (len(text) + 2) // 3)
