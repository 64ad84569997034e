"""What a call costs: list prices per model and the arithmetic from token usage to dollars.

Prices come from ``genai-prices`` (a maintained table of the vendors' list prices, including
prompt-cache rates and long-context tiers), which prices every call of a model it knows. A few
models whose list price changed after its data snapshot are kept in ``_OVERRIDES`` (USD per
million tokens), and explicit prices given to a provider win over both. A model neither knows
has an *unknown* cost, which the caller records as 0 with ``cost_known=False`` rather than
guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from cambrian.llm.base import Usage


@dataclass(frozen=True)
class ModelPrices:
    input_per_mtok: float
    output_per_mtok: float
    # Price of prompt tokens served from the provider's prompt cache; None bills them as input.
    cached_input_per_mtok: float | None = None
    # The genai-prices model these came from: its calculator then prices each call (tiers too).
    genai_model: str | None = None


FREE = ModelPrices(input_per_mtok=0.0, output_per_mtok=0.0, cached_input_per_mtok=0.0)

# List prices genai-prices' snapshot does not have yet (checked against it when adopted).
_OVERRIDES: dict[str, ModelPrices] = {
    # DeepSeek V3.2 pricing, shared by both endpoints (cached = cache hit); the snapshot still
    # lists V3's 0.27/1.10.
    "deepseek-chat": ModelPrices(0.28, 0.42, 0.028),
    "deepseek-reasoner": ModelPrices(0.28, 0.42, 0.028),
}
# Tokens of the probe call that reads a model's base rates from genai-prices (far below any
# long-context tier).
_PROBE_TOKENS = 1_000

# A table key matches a model name when the rest of the name starts with one of these, so
# "claude-sonnet-4-20250514" resolves to "claude-sonnet-4" while "gpt-50" does not match "gpt-5".
_SUFFIX_SEPARATORS = ("-", ":", "@", "_")
# ...unless the rest starts with a short version number: "claude-opus-4-7" is a newer model than
# "claude-opus-4" whose price we do not know, whereas "-20250514" or "-001" are snapshot tags.
_VERSION_BUMP = re.compile(r"^[-_]\d{1,2}(?!\d)")


def _normalise(model: str) -> str:
    return model.strip().lower().rsplit("/", 1)[-1]


def _table_key(name: str, table: dict[str, ModelPrices]) -> str | None:
    best_key: str | None = None
    for key in table:
        if not name.startswith(key):
            continue
        rest = name[len(key) :]
        if rest and (not rest.startswith(_SUFFIX_SEPARATORS) or _VERSION_BUMP.match(rest)):
            continue
        if best_key is None or len(key) > len(best_key):
            best_key = key
    return best_key


def lookup_prices(model: str, override: ModelPrices | None = None) -> ModelPrices | None:
    """Prices for ``model``: ``override`` if given, else ``_OVERRIDES``' longest matching
    entry, else genai-prices'.

    Vendor path prefixes ("models/gemini-2.5-pro", "openai/gpt-4o") are ignored. Returns None
    when the model is unknown, meaning its cost cannot be computed.
    """
    if override is not None:
        return override
    name = _normalise(model)
    key = _table_key(name, _OVERRIDES)
    if key is not None:
        return _OVERRIDES[key]
    return _genai_prices(name) if name else None


def _genai_calc(model: str, usage: Usage) -> float:
    from genai_prices import Usage as GenaiUsage
    from genai_prices import calc_price

    cached = min(max(usage.cached_prompt_tokens, 0), usage.prompt_tokens)
    result = calc_price(GenaiUsage(input_tokens=usage.prompt_tokens, cache_read_tokens=cached,
                                   output_tokens=usage.completion_tokens), model)
    return float(result.total_price)


@lru_cache(maxsize=256)
def _genai_prices(name: str) -> ModelPrices | None:
    try:
        from genai_prices import Usage as GenaiUsage
        from genai_prices import calc_price
    except ImportError:
        return None
    try:
        found = calc_price(GenaiUsage(input_tokens=_PROBE_TOKENS), name)
    except LookupError:
        return None
    model = found.model.id
    per_mtok = 1_000_000 / _PROBE_TOKENS

    def rate(**tokens: int) -> float:
        return float(calc_price(GenaiUsage(**tokens), model).total_price) * per_mtok

    cached_total = rate(input_tokens=_PROBE_TOKENS, cache_read_tokens=_PROBE_TOKENS)
    return ModelPrices(input_per_mtok=rate(input_tokens=_PROBE_TOKENS),
                       output_per_mtok=rate(output_tokens=_PROBE_TOKENS),
                       cached_input_per_mtok=cached_total, genai_model=model)


def cost_usd(prices: ModelPrices, usage: Usage) -> float:
    """Dollar cost of one call; cached prompt tokens are billed at the cached rate when known."""
    if prices.genai_model is not None:
        return _genai_calc(prices.genai_model, usage)
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
