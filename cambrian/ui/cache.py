"""What the UI computes from a run's store, kept between requests so that a large run's overview
is not read again on every page load.

``VersionCache``: values keyed by the store's version (its file's and write-ahead log's size
and change time, ``Database.version``: every commit changes it). A finished run's overview,
plots and series are computed once per UI process; a running run's are computed again after
each commit. Values are whatever the pages are built from (bounded: thinned series, tables of a
few dozen lines).

``LedgerLog``: each run's LLM ledger, read once and then extended by the calls added since (the
ledger only grows): the spend over time (the running total of cost and tokens after each call,
in time order; 24 bytes per call), the sums per model, the failed calls, and each call's model,
time, latency and whether it failed or was retried (in id order; 21 bytes per call). The score
series' spend at each evaluation, the cumulative cost plot, the run's totals, the model table,
the "doing now" panel and the LLM transport chart read it instead of scanning the whole ledger
again, each of them.

``BestMemo``: the best score so far at the last point of each series the UI served, so that a
page asking for the points after it (``?after=ID``) is answered from the rows after it alone.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from cambrian.llm.health import RETRIED_MARK, TransportCalls
from cambrian.search import ui_columns
from cambrian.search.ui_columns import Columns
from cambrian.store.rows import LedgerRow
from cambrian.store.store import Store

T = TypeVar("T")


def run_identity(store: Store) -> tuple[str, float]:
    """A run's store: its file and when the run was made (a new run in the same folder is
    another)."""
    return str(store.database.path), store.runs.info().created_at


class VersionCache:
    """Up to ``size`` values, least recently used dropped first."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._items: OrderedDict[tuple[Any, ...], tuple[tuple[int, ...], Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0  # values computed (misses), for tests and benchmarks

    def get(self, store: Store, name: str, compute: Callable[[], T]) -> T:
        """``compute()``'s value for this store as it is now (``name`` says what it is, with
        any arguments)."""
        key = (str(store.database.path), name)
        version = store.database.version()  # before reading: a commit during compute misses
        with self._lock:
            held = self._items.get(key)
            if held is not None and held[0] == version:
                self._items.move_to_end(key)
                return held[1]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:
            self.computed += 1
            self._items[key] = (version, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


Call = tuple[int, float, float, int, int, int, float, str, str, str]  # Views.calls_after


@dataclass
class LedgerLog:
    """The run's LLM calls up to call ``last_id``: their times in order with the spend (USD,
    tokens) after each, and per model the ledger's sums, the mutation calls and the failed
    calls (model, time, error)."""

    last_id: int = 0
    times: array = field(default_factory=lambda: array("d"))
    cost: array = field(default_factory=lambda: array("d"))
    tokens: array = field(default_factory=lambda: array("q"))
    # model -> [calls, failed, prompt, completion, cached tokens, cost, latency]
    sums: dict[str, list[float]] = field(default_factory=dict)
    mutation: dict[str, int] = field(default_factory=dict)
    failed: list[tuple[str, float, str]] = field(default_factory=list)
    # Each call in id order, for the transport chart (llm/health.py's TransportCalls).
    models: dict[str, int] = field(default_factory=dict)  # model -> its index in call_model
    call_model: array = field(default_factory=lambda: array("I"))
    call_at: array = field(default_factory=lambda: array("d"))
    call_latency: array = field(default_factory=lambda: array("d"))
    call_flags: array = field(default_factory=lambda: array("B"))  # 1: failed, 2: retried

    def extend(self, calls: list[Call]) -> None:
        """Fold in calls that came after ``last_id``, in id order."""
        if not calls:
            return
        for _, at, cost, prompt, completion, cached, latency, model, purpose, error in calls:
            self.call_model.append(self.models.setdefault(model, len(self.models)))
            self.call_at.append(at)
            self.call_latency.append(latency)
            self.call_flags.append(bool(error) | (RETRIED_MARK in error) << 1)
            line = self.sums.setdefault(model, [0, 0, 0, 0, 0, 0.0, 0.0])
            for n, value in enumerate((1, bool(error), prompt, completion, cached, cost,
                                       latency)):
                line[n] += value
            if purpose == "mutation":
                self.mutation[model] = self.mutation.get(model, 0) + 1
        self.failed += [(c[7], c[1], c[9]) for c in calls if c[9]]
        spent = [(c[1], c[2], c[3] + c[4]) for c in calls]
        in_order = all(a[0] <= b[0] for a, b in itertools.pairwise(spent)) and (
            not self.times or spent[0][0] >= self.times[-1])
        if not in_order:  # a call stored after a later one (rare): sort everything again
            earlier = [(t, c - (self.cost[i - 1] if i else 0.0),
                        k - (self.tokens[i - 1] if i else 0))
                       for i, (t, c, k) in enumerate(zip(self.times, self.cost, self.tokens))]
            spent = sorted(earlier + spent, key=lambda row: row[0])
            self.times, self.cost, self.tokens = array("d"), array("d"), array("q")
        cost = self.cost[-1] if self.cost else 0.0
        tokens = self.tokens[-1] if self.tokens else 0
        for at, call_cost, call_tokens in spent:
            cost, tokens = cost + call_cost, tokens + call_tokens
            self.times.append(at)
            self.cost.append(cost)
            self.tokens.append(tokens)
        self.last_id = calls[-1][0]

    @classmethod
    def of_columns(cls, columns: Columns) -> LedgerLog:
        """The log of the calls in ``columns`` (``search/ui_columns.py``), as ``extend`` makes
        it from the same calls."""
        log = cls()
        if not len(columns.call_id):
            return log
        names = columns.names["model"]
        first = np.unique(columns.call_model, return_index=True)
        in_order = first[0][np.argsort(first[1])]  # models by their first call
        remap = np.zeros(max(len(names), 1), dtype=np.int64)
        remap[in_order] = np.arange(len(in_order))
        log.models = {names[m]: n for n, m in enumerate(in_order.tolist())}
        log.call_model = array("I", remap[columns.call_model].astype(np.uint32).tobytes())
        log.call_at = array("d", columns.call_at.astype(np.float64).tobytes())
        log.call_latency = array("d", columns.call_latency.astype(np.float64).tobytes())
        log.call_flags = array("B", columns.call_flags.astype(np.uint8).tobytes())
        spent = columns.call_prompt + columns.call_completion
        at, cost = columns.call_at, columns.call_cost
        if np.any(at[1:] < at[:-1]):  # a call stored after a later one: in time order
            order = np.argsort(at, kind="stable")
            at, cost, spent = at[order], cost[order], spent[order]
        log.times = array("d", np.ascontiguousarray(at, dtype=np.float64).tobytes())
        log.cost = array("d", np.cumsum(cost).tobytes())
        log.tokens = array("q", np.cumsum(spent).astype(np.int64).tobytes())
        local = remap[columns.call_model]
        count = len(in_order)
        failed = columns.call_flags & 1
        mutation = np.bincount(local[columns.call_purpose == columns.names["purpose"].index(
            "mutation")], minlength=count) if "mutation" in columns.names["purpose"] else \
            np.zeros(count, dtype=np.int64)
        sums = [np.bincount(local, minlength=count), np.bincount(local, failed, count),
                np.bincount(local, columns.call_prompt, count),
                np.bincount(local, columns.call_completion, count),
                np.bincount(local, columns.call_cached, count),
                np.bincount(local, columns.call_cost, count),
                np.bincount(local, columns.call_latency, count)]
        for model, n in log.models.items():
            log.sums[model] = [int(sums[0][n]), int(sums[1][n]), int(sums[2][n]),
                               int(sums[3][n]), int(sums[4][n]), float(sums[5][n]),
                               float(sums[6][n])]
            if mutation[n]:
                log.mutation[model] = int(mutation[n])
        log.failed = list(columns.failed_calls)
        log.last_id = int(columns.call_id[-1])
        return log

    def at(self, when: float) -> tuple[float, int]:
        """The spend of the calls made up to ``when``."""
        n = bisect.bisect_right(self.times, when)
        return (self.cost[n - 1], self.tokens[n - 1]) if n else (0.0, 0)

    def total(self) -> tuple[float, int, int]:
        """USD, tokens and calls of the whole ledger read so far."""
        return (self.cost[-1], self.tokens[-1], len(self.times)) if self.times else (0.0, 0, 0)

    def ledger(self) -> list[LedgerRow]:
        """What ``contexts.ledger()`` reads: calls, tokens and cost per model."""
        return [LedgerRow(model, int(s[0]), int(s[1]), int(s[2]), int(s[3]), int(s[4]), s[5],
                          s[6]) for model, s in sorted(self.sums.items())]

    def transport_calls(self) -> TransportCalls:
        """Every call read so far as the transport chart's columns (``health.series_of``)."""
        flags = np.frombuffer(self.call_flags, dtype=np.uint8) if self.call_flags else \
            np.zeros(0, dtype=np.uint8)
        return TransportCalls(
            list(self.models), np.asarray(self.call_model, dtype=np.int64),
            np.asarray(self.call_at, dtype=np.float64),
            np.asarray(self.call_latency, dtype=np.float64), (flags & 1).astype(bool),
            (flags & 2).astype(bool))

    def nbytes(self) -> int:
        return sum(a.itemsize * len(a) for a in (self.times, self.cost, self.tokens,
                                                  self.call_model, self.call_at,
                                                  self.call_latency, self.call_flags))


def read_ledger(store: Store) -> LedgerLog:
    """A run's whole ledger log, read now."""
    log = LedgerLog()
    log.extend(store.views.calls_after(0))
    return log


class LedgerLogs:
    """One ``LedgerLog`` per run, brought up to date on each use."""

    def __init__(self) -> None:
        self._logs: dict[tuple[str, float], LedgerLog] = {}
        self._lock = threading.Lock()

    def current(self, store: Store, columns: Callable[[], Columns | None] | None = None,
                ) -> LedgerLog:
        """``columns``: the run's UI columns (``search/ui_columns.py``) to start a new log
        from, when there are any."""
        with self._lock:  # one reader at a time extends a run's log
            log = self._logs.get(run_identity(store))
            if log is None:
                found = columns() if columns is not None else None
                log = LedgerLog.of_columns(found) if found is not None else LedgerLog()
                self._logs[run_identity(store)] = log
            log.extend(store.views.calls_after(log.last_id))
            return log


class BestMemo:
    """The best score so far at candidate ids (the last point of each series served)."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, float, int], float | None] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, store: Store, candidate_id: int, best: float | None) -> None:
        with self._lock:
            self._items[(*run_identity(store), candidate_id)] = best
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def find(self, store: Store, candidate_id: int) -> tuple[bool, float | None]:
        """(known, best so far at ``candidate_id``)."""
        with self._lock:
            key = (*run_identity(store), candidate_id)
            return (key in self._items, self._items.get(key))


class ColumnFiles:
    """Each run's UI columns as its file holds them (``search/ui_columns.py``; read once per
    UI process and file version), extended by the rows after them on each use: the columns
    of the store as it is now, or None when the run has no usable file."""

    def __init__(self) -> None:
        self._files: dict[tuple[str, float], tuple[tuple[int, int], Columns | None]] = {}
        self._lock = threading.Lock()
        self.used = 0  # usable files read, for tests and benchmarks

    def current(self, store: Store) -> Columns | None:
        path = ui_columns.path_of(store)
        try:
            stat = path.stat()
        except OSError:
            return None
        version = (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            held = self._files.get(run_identity(store))
            if held is None or held[0] != version:
                held = (version, ui_columns.read_checked(store))
                self._files[run_identity(store)] = held
                self.used += held[1] is not None
        return ui_columns.extend(store, held[1]) if held[1] is not None else None


@dataclass
class UICaches:
    """The caches of one UI process."""

    values: VersionCache = field(default_factory=VersionCache)
    ledger: LedgerLogs = field(default_factory=LedgerLogs)
    best: BestMemo = field(default_factory=BestMemo)
    files: ColumnFiles = field(default_factory=ColumnFiles)

    def columns(self, store: Store) -> Columns | None:
        """The run's columns as the store is now (kept per store version), or None."""
        return self.values.get(store, "columns", lambda: self.files.current(store))

    def ledger_of(self, store: Store) -> LedgerLog:
        """The run's ledger log, started from its columns when it has them."""
        return self.ledger.current(store, lambda: self.columns(store))
