"""Price lookup by model name and the token-to-dollar arithmetic."""

from __future__ import annotations

import pytest

from cambrian.llm.base import Usage
from cambrian.llm.pricing import FREE, ModelPrices, cost_usd, lookup_prices, priced


@pytest.mark.parametrize(
    ("model", "expected_key_model"),
    [
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("o4-mini-2025-04-16", "o4-mini"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("DeepSeek-Chat", "deepseek-chat"),
    ],
)
def test_snapshot_and_prefixed_names_resolve_to_their_family(
    model: str, expected_key_model: str
) -> None:
    prices = lookup_prices(model)

    assert prices is not None
    assert prices == lookup_prices(expected_key_model)


def test_longest_prefix_wins() -> None:
    mini = lookup_prices("gpt-4o-mini-2024-07-18")
    full = lookup_prices("gpt-4o")

    assert mini is not None and full is not None
    assert mini.input_per_mtok < full.input_per_mtok
    assert lookup_prices("gemini-2.5-flash-lite") != lookup_prices("gemini-2.5-flash")


@pytest.mark.parametrize(
    "model",
    ["llama3.1:8b", "qwen2.5-coder", "gpt-50", "gpt-5.9", "claude-opus-4-9", "", "my-finetune"],
)
def test_unknown_or_newer_versions_are_unknown_not_guessed(model: str) -> None:
    assert lookup_prices(model) is None


def test_override_wins_even_for_known_and_unknown_models() -> None:
    custom = ModelPrices(input_per_mtok=9.0, output_per_mtok=99.0)

    assert lookup_prices("gpt-4.1", custom) is custom
    assert lookup_prices("totally-unknown", custom) is custom


def test_cost_bills_cached_prompt_tokens_at_the_cached_rate() -> None:
    prices = ModelPrices(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000, cached_prompt_tokens=250_000)

    assert cost_usd(prices, usage) == pytest.approx(0.75 * 2.0 + 0.25 * 0.5 + 0.5 * 8.0)


def test_cost_without_cached_rate_bills_cached_tokens_as_input() -> None:
    prices = ModelPrices(input_per_mtok=1.0, output_per_mtok=4.0)
    usage = Usage(prompt_tokens=2_000_000, completion_tokens=0, cached_prompt_tokens=1_000_000)

    assert cost_usd(prices, usage) == pytest.approx(2.0)


def test_local_models_are_free_and_unknown_prices_are_flagged() -> None:
    usage = Usage(prompt_tokens=10_000, completion_tokens=2_000)

    assert priced(FREE, usage) == (0.0, True)
    assert priced(None, usage) == (0.0, False)
    known_cost, known = priced(lookup_prices("gpt-5-mini"), usage)
    assert known and known_cost > 0


def test_prices_come_from_genai_prices_with_its_tiers() -> None:
    prices = lookup_prices("claude-sonnet-4-5-20250929")
    assert prices is not None and prices.genai_model == "claude-sonnet-4-5"
    assert prices.input_per_mtok == pytest.approx(3.0)
    assert prices.cached_input_per_mtok == pytest.approx(0.3)
    short = cost_usd(prices, Usage(prompt_tokens=100_000, completion_tokens=0))
    long = cost_usd(prices, Usage(prompt_tokens=300_000, completion_tokens=0))
    assert short == pytest.approx(0.3)
    assert long > 3 * short  # the long-context tier (over 200k prompt tokens) costs more


def test_kept_overrides_win_over_genai_prices() -> None:
    # DeepSeek V3.2's list price, which the genai-prices snapshot does not have.
    assert lookup_prices("deepseek-chat") == ModelPrices(0.28, 0.42, 0.028)
