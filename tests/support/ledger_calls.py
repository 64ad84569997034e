"""LLM calls stored in a real store with chosen times: three models, answered, failed and
retried ones (the transport chart's tests)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from cambrian.store.rows import NewContext
from cambrian.store.store import Store


def add_calls(store: Store, monkeypatch: pytest.MonkeyPatch, count: int, span_s: float,
              seed: int, start: float = 1_700_000_000.0) -> None:
    """Calls of three models over ``span_s`` seconds: answered ones with latencies (ties
    included), failed ones, some of them retried; a few stamped before the first."""
    rng = random.Random(seed)
    times = sorted(start + rng.uniform(0, span_s) for _ in range(count))
    times[0] = start
    times[5] = start - 30  # recorded late: before the first call's slot
    clock = iter(times)
    monkeypatch.setattr("cambrian.store.contexts.time", SimpleNamespace(time=lambda: next(clock)))
    for _ in range(count):
        kind = rng.random()
        error = ("" if kind < 0.7 else "LLMTimeout: no answer (attempt 1 of 3; retried)"
                 if kind < 0.85 else "LLMUnavailable: HTTP 500")
        store.contexts.add(NewContext(
            purpose="mutation", model=rng.choice(["a-model", "b-model", "c-model"]),
            provider="openai", params={}, messages=[],
            latency_s=rng.choice([0.5, 1.25, rng.uniform(0.1, 9.0)]), error=error))
    monkeypatch.undo()
