"""What a call costs: list prices per model and the arithmetic from token usage to dollars.

Prices are USD per million tokens, taken from the vendors' public list prices (late 2025,
standard tier, prompts under any long-context surcharge threshold). They drift; pass explicit
prices to a provider to override them. A model missing from the table has an *unknown* cost,
which the caller records as 0 with ``cost_known=False`` rather than guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cambrian.llm.base import Usage


@dataclass(frozen=True)
class ModelPrices:
    input_per_mtok: float
    output_per_mtok: float
    # Price of prompt tokens served from the provider's prompt cache; None bills them as input.
    cached_input_per_mtok: float | None = None


FREE = ModelPrices(input_per_mtok=0.0, output_per_mtok=0.0, cached_input_per_mtok=0.0)

_BUILTIN_PRICES: dict[str, ModelPrices] = {
    # OpenAI
    "gpt-4.1": ModelPrices(2.00, 8.00, 0.50),
    "gpt-4.1-mini": ModelPrices(0.40, 1.60, 0.10),
    "gpt-4.1-nano": ModelPrices(0.10, 0.40, 0.025),
    "gpt-4o": ModelPrices(2.50, 10.00, 1.25),
    "gpt-4o-mini": ModelPrices(0.15, 0.60, 0.075),
    "o3": ModelPrices(2.00, 8.00, 0.50),
    "o3-mini": ModelPrices(1.10, 4.40, 0.55),
    "o4-mini": ModelPrices(1.10, 4.40, 0.275),
    "gpt-5": ModelPrices(1.25, 10.00, 0.125),
    "gpt-5.1": ModelPrices(1.25, 10.00, 0.125),
    "gpt-5-mini": ModelPrices(0.25, 2.00, 0.025),
    "gpt-5-nano": ModelPrices(0.05, 0.40, 0.005),
    # Anthropic (cached = cache read; cache writes are billed as plain input here)
    "claude-opus-4": ModelPrices(15.00, 75.00, 1.50),
    "claude-opus-4-1": ModelPrices(15.00, 75.00, 1.50),
    "claude-opus-4-5": ModelPrices(5.00, 25.00, 0.50),
    "claude-sonnet-4": ModelPrices(3.00, 15.00, 0.30),
    "claude-sonnet-4-5": ModelPrices(3.00, 15.00, 0.30),
    "claude-3-7-sonnet": ModelPrices(3.00, 15.00, 0.30),
    "claude-3-5-sonnet": ModelPrices(3.00, 15.00, 0.30),
    "claude-haiku-4-5": ModelPrices(1.00, 5.00, 0.10),
    "claude-3-5-haiku": ModelPrices(0.80, 4.00, 0.08),
    # Google (prompts up to 200k tokens for 2.5 Pro)
    "gemini-2.5-pro": ModelPrices(1.25, 10.00, 0.31),
    "gemini-2.5-flash": ModelPrices(0.30, 2.50, 0.075),
    "gemini-2.5-flash-lite": ModelPrices(0.10, 0.40, 0.025),
    "gemini-2.0-flash": ModelPrices(0.10, 0.40, 0.025),
    "gemini-2.0-flash-lite": ModelPrices(0.075, 0.30),
    # DeepSeek (V3.2 pricing, shared by both endpoints; cached = cache hit)
    "deepseek-chat": ModelPrices(0.28, 0.42, 0.028),
    "deepseek-reasoner": ModelPrices(0.28, 0.42, 0.028),
}

# A table key matches a model name when the rest of the name starts with one of these, so
# "claude-sonnet-4-20250514" resolves to "claude-sonnet-4" while "gpt-50" does not match "gpt-5".
_SUFFIX_SEPARATORS = ("-", ":", "@", "_")
# ...unless the rest starts with a short version number: "claude-opus-4-7" is a newer model than
# "claude-opus-4" whose price we do not know, whereas "-20250514" or "-001" are snapshot tags.
_VERSION_BUMP = re.compile(r"^[-_]\d{1,2}(?!\d)")


def lookup_prices(model: str, override: ModelPrices | None = None) -> ModelPrices | None:
    """Prices for ``model``: ``override`` if given, else the longest matching table entry.

    Vendor path prefixes ("models/gemini-2.5-pro", "openai/gpt-4o") are ignored. Returns None
    when the model is unknown, meaning its cost cannot be computed.
    """
    if override is not None:
        return override
    name = model.strip().lower().rsplit("/", 1)[-1]
    best_key: str | None = None
    for key in _BUILTIN_PRICES:
        if not name.startswith(key):
            continue
        rest = name[len(key) :]
        if rest and (not rest.startswith(_SUFFIX_SEPARATORS) or _VERSION_BUMP.match(rest)):
            continue
        if best_key is None or len(key) > len(best_key):
            best_key = key
    return _BUILTIN_PRICES[best_key] if best_key is not None else None


def cost_usd(prices: ModelPrices, usage: Usage) -> float:
    """Dollar cost of one call; cached prompt tokens are billed at the cached rate when known."""
    cached = min(max(usage.cached_prompt_tokens, 0), usage.prompt_tokens)
    uncached = usage.prompt_tokens - cached
    cached_rate = (
        prices.cached_input_per_mtok
        if prices.cached_input_per_mtok is not None
        else prices.input_per_mtok
    )
    total = (
        uncached * prices.input_per_mtok
        + cached * cached_rate
        + usage.completion_tokens * prices.output_per_mtok
    )
    return total / 1_000_000


def priced(prices: ModelPrices | None, usage: Usage) -> tuple[float, bool]:
    """``(cost_usd, cost_known)`` for a response: unknown prices cost 0 and are flagged."""
    if prices is None:
        return 0.0, False
    return cost_usd(prices, usage), True
