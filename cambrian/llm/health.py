"""How the model servers answered: per model, the transport errors by kind (HTTP status, a body
that is not the protocol's, a timeout, no answer), the attempts retried, and the latency of the
calls that got a reply, over the whole run and per minute of it. Computed from the ledger (one
``contexts`` row per request sent, written by the gateway: a failed attempt's row holds
``ErrorClass: message``, and "(attempt N of M; retried)" when the retry policy tried again)."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from cambrian.store.store import Store

_HTTP = re.compile(r"\bHTTP (\d{3})\b")
# The gateway's error class names, as a person reads them.
_KINDS = {"LLMTimeout": "timeout", "LLMRateLimited": "rate limited",
          "LLMMalformedReply": "bad reply body", "LLMUnreachable": "unreachable",
          "LLMUnavailable": "unavailable", "LLMAuthError": "auth refused",
          "ContextOverflow": "context overflow", "LLMBadRequest": "bad request"}
RETRIED_MARK = "; retried)"
BUCKET_S = 60.0
YOUNG_BUCKET_S, YOUNG_SPAN_S = 10.0, 600.0  # slots of a run whose requests span < 10 min
LATENCY_WINDOW = 1000  # the answered requests the latency figures are read from (the latest)


def error_kind(error: str) -> str:
    """A recorded call error as one short kind: "HTTP 500", "HTTP 429", "bad reply body",
    "timeout", "unreachable"... ("" for a call without error)."""
    if not error:
        return ""
    status = _HTTP.search(error)
    if status:
        return f"HTTP {status.group(1)}"
    name = error.split(":", 1)[0].strip()
    return _KINDS.get(name, name or "error")


@dataclass
class ModelTransport:
    """One model's transport figures."""

    model: str
    requests: int = 0  # every request sent (a retried attempt is one)
    errors: int = 0
    retried: int = 0  # failed attempts the retry policy tried again
    by_kind: dict[str, int] = field(default_factory=dict)
    latency_p50_s: float | None = None  # of its latest answered requests (LATENCY_WINDOW)
    latency_p95_s: float | None = None
    latency_last_s: float | None = None  # the latest answered request's
    last_error: str = ""
    last_error_at: float | None = None

    @property
    def kinds_text(self) -> str:
        return ", ".join(f"{kind} ×{n}" for kind, n in
                         sorted(self.by_kind.items(), key=lambda item: -item[1]))


@dataclass
class TransportSeries:
    """Per slot of the run (from its first request; ``bucket_s`` long): each model's requests,
    errors, retries and median latency; what the overview plots."""

    minutes: list[float] = field(default_factory=list)  # each slot's start
    models: dict[str, dict[str, list[float | None]]] = field(default_factory=dict)
    bucket_s: float = BUCKET_S


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def transport_by_model(store: Store, failed: list[tuple[str, float, str]] | None = None,
                       ) -> list[ModelTransport]:
    """Per model, the whole run's requests, errors and retries, and the latency of its last
    ``LATENCY_WINDOW`` answered requests (models in name order). ``failed``: the store's
    ``contexts.failed_rows()`` when the caller has read them already."""
    found = {model: ModelTransport(model, requests=calls)
             for model, calls in store.contexts.requests_by_model().items()}
    for model, at, error in store.contexts.failed_rows() if failed is None else failed:
        line = found.setdefault(model, ModelTransport(model))
        line.errors += 1
        line.retried += RETRIED_MARK in error
        kind = error_kind(error)
        line.by_kind[kind] = line.by_kind.get(kind, 0) + 1
        line.last_error, line.last_error_at = error.splitlines()[0][:300], at
    latencies: dict[str, list[float]] = {}
    for model, latency in store.contexts.recent_latencies(LATENCY_WINDOW):
        latencies.setdefault(model, []).append(latency)
    for model, values in latencies.items():
        line = found.setdefault(model, ModelTransport(model))
        line.latency_p50_s = statistics.median(values)
        line.latency_p95_s = _quantile(values, 0.95)
        line.latency_last_s = values[-1]
    return [found[m] for m in sorted(found)]


def transport_series(store: Store, bucket_s: float | None = None) -> TransportSeries:
    """The run's requests per ``bucket_s`` seconds (None: 10 s while the requests span less
    than ten minutes, else a minute), per model: requests, errors, retried attempts and the
    median latency of those answered."""
    rows = store.contexts.transport_rows()
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
        columns: dict[str, list[float | None]] = {
            name: [float(counter.get(i, 0)) for i in range(last + 1)]
            for name, counter in counts[model].items()}
        latency = answered.get(model, {})
        columns["latency_s"] = [round(statistics.median(latency[i]), 3) if latency.get(i)
                                else None for i in range(last + 1)]
        series.models[model] = columns
    return series
