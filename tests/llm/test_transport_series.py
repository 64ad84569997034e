"""The LLM transport chart's per-slot series (``llm/health.py``), computed from column arrays,
against the plain per-row count it replaced, on real stores."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.ledger_calls import add_calls

from cambrian.llm.health import (
    BUCKET_S,
    RETRIED_MARK,
    YOUNG_BUCKET_S,
    YOUNG_SPAN_S,
    TransportSeries,
    transport_series,
)
from cambrian.store.store import Store


def per_row(rows: list[tuple[int, str, float, float, str]],
            bucket_s: float | None = None) -> TransportSeries:
    """The series as the per-row loop counted it (the reference)."""
    if not rows:
        return TransportSeries()
    start = rows[0][2]
    if bucket_s is None:
        bucket_s = YOUNG_BUCKET_S if rows[-1][2] - start < YOUNG_SPAN_S else BUCKET_S
    last = int((rows[-1][2] - start) // bucket_s)
    counts: dict[str, dict[str, Counter[int]]] = {}
    answered: dict[str, dict[int, list[float]]] = {}
    for _, model, at, latency, error in rows:
        slot = int((at - start) // bucket_s)
        mine = counts.setdefault(model, {"requests": Counter(), "errors": Counter(),
                                         "retried": Counter()})
        mine["requests"][slot] += 1
        if error:
            mine["errors"][slot] += 1
            mine["retried"][slot] += RETRIED_MARK in error
        else:
            answered.setdefault(model, {}).setdefault(slot, []).append(latency)
    series = TransportSeries(minutes=[round(i * bucket_s / 60.0, 3) for i in range(last + 1)],
                             bucket_s=bucket_s)
    for model in sorted(counts):
        columns: dict[str, list[Any]] = {
            name: [float(counter.get(i, 0)) for i in range(last + 1)]
            for name, counter in counts[model].items()}
        latency = answered.get(model, {})
        columns["latency_s"] = [round(statistics.median(latency[i]), 3) if latency.get(i)
                                else None for i in range(last + 1)]
        series.models[model] = columns
    return series


@pytest.mark.parametrize(("span_s", "bucket_s"), [(400.0, None), (5000.0, None), (5000.0, 30.0)])
def test_the_series_from_columns_is_the_per_row_count(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      span_s: float, bucket_s: float | None):
    store = Store.open(tmp_path / "run", create=True)
    assert transport_series(store) == TransportSeries()
    add_calls(store, monkeypatch, 900, span_s, seed=int(span_s))
    rows = store.contexts.transport_rows()
    found = transport_series(store, bucket_s)
    assert found == per_row(rows, bucket_s)
    assert found.bucket_s == (bucket_s or (YOUNG_BUCKET_S if span_s < YOUNG_SPAN_S else BUCKET_S))
    assert sum(sum(c["retried"]) for c in found.models.values()) > 0
    store.close()
