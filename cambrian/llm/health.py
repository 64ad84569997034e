"""How the model servers answered: per model, the transport errors by kind (HTTP status, a body
that is not the protocol's, a timeout, no answer), the attempts retried, and the latency of the
calls that got a reply, over the whole run and per minute of it. Computed from the ledger (one
``contexts`` row per request sent, written by the gateway: a failed attempt's row holds
``ErrorClass: message``, and "(attempt N of M; retried)" when the retry policy tried again)."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

import numpy as np

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


@dataclass(frozen=True)
class TransportCalls:
    """Every request in id order, as columns: what the per-slot series is computed from."""

    models: list[str]  # model names; ``model`` holds an index into them per request
    model: np.ndarray  # int
    at: np.ndarray  # float64: when it was recorded
    latency: np.ndarray  # float64 seconds
    failed: np.ndarray  # bool: it recorded an error
    retried: np.ndarray  # bool: a failed attempt the retry policy tried again


def calls_of(rows: list[tuple[int, str, float, float, str]]) -> TransportCalls:
    """Columns of ``Contexts.transport_rows()``."""
    models: dict[str, int] = {}
    codes = [models.setdefault(model, len(models)) for _, model, _, _, _ in rows]
    return TransportCalls(list(models), np.asarray(codes, dtype=np.int64),
                          np.asarray([row[2] for row in rows], dtype=np.float64),
                          np.asarray([row[3] for row in rows], dtype=np.float64),
                          np.asarray([bool(row[4]) for row in rows], dtype=bool),
                          np.asarray([RETRIED_MARK in row[4] for row in rows], dtype=bool))


def transport_series(store: Store, bucket_s: float | None = None) -> TransportSeries:
    """The run's requests per ``bucket_s`` seconds (None: 10 s while the requests span less
    than ten minutes, else a minute), per model: requests, errors, retried attempts and the
    median latency of those answered."""
    return series_of(calls_of(store.contexts.transport_rows()), bucket_s)


def series_of(calls: TransportCalls, bucket_s: float | None = None) -> TransportSeries:
    """``transport_series`` of requests given as columns (the UI's ledger log keeps them)."""
    if not len(calls.at):
        return TransportSeries()
    start = float(calls.at[0])
    if bucket_s is None:
        bucket_s = YOUNG_BUCKET_S if float(calls.at[-1]) - start < YOUNG_SPAN_S else BUCKET_S
    last = int((float(calls.at[-1]) - start) // bucket_s)
    slots = np.floor_divide(calls.at - start, bucket_s).astype(np.int64)
    shown = (slots >= 0) & (slots <= last)  # the slots a later, earlier-stamped row may miss
    series = TransportSeries(minutes=[round(i * bucket_s / 60.0, 3) for i in range(last + 1)],
                             bucket_s=bucket_s)
    width = max(last + 1, 0)
    for code in sorted(set(calls.model.tolist()), key=lambda c: calls.models[c]):
        mine = (calls.model == code) & shown

        def per_slot(rows: np.ndarray) -> list[float | None]:
            return np.bincount(slots[rows], minlength=width)[:width].astype(float).tolist()

        columns: dict[str, list[float | None]] = {
            "requests": per_slot(mine), "errors": per_slot(mine & calls.failed),
            "retried": per_slot(mine & calls.failed & calls.retried)}
        answered = mine & ~calls.failed
        latency: list[float | None] = [None] * width
        if answered.any():  # each slot's median: the middle one or two of its sorted latencies
            slot, seconds = slots[answered], calls.latency[answered]
            order = np.lexsort((seconds, slot))
            slot, seconds = slot[order], seconds[order]
            found, first, count = np.unique(slot, return_index=True, return_counts=True)
            middle = (seconds[first + (count - 1) // 2] + seconds[first + count // 2]) / 2
            for at, value in zip(found.tolist(), middle.tolist()):
                latency[at] = round(value, 3)
        columns["latency_s"] = latency
        series.models[calls.models[code]] = columns
    return series
