"""The model a small side task defaults to: the ensemble's cheapest.

Cheapest means the lowest known list price per token (the model config's own prices, else
``pricing.py``'s table; input and output prices summed); with no remote model of known price, an
embedded local model (free, but slow); else the first model."""

from __future__ import annotations

from collections.abc import Sequence

from cambrian.config import ModelConfig
from cambrian.llm.builtin_providers import model_prices
from cambrian.llm.pricing import lookup_prices
from cambrian.llm.providers import PROVIDERS


def price_per_mtok(model: ModelConfig) -> float | None:
    """Input plus output USD per million tokens of a remote model; None when unknown (and for
    a model run in this process, which has no list price)."""
    if PROVIDERS.get(model.provider).local:
        return None
    prices = lookup_prices(model.model, model_prices(model))
    return None if prices is None else prices.input_per_mtok + prices.output_per_mtok


def cheapest_label(models: Sequence[ModelConfig]) -> str:
    """The label of the cheapest model of ``models`` (see the module's docstring)."""
    if not models:
        raise ValueError("no model to choose from")
    priced = [(price, index) for index, model in enumerate(models)
              if (price := price_per_mtok(model)) is not None]
    if priced:
        return models[min(priced)[1]].label
    local = [m for m in models if PROVIDERS.get(m.provider).local]
    return (local or list(models))[0].label
