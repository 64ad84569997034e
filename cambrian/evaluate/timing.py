"""Timing an evaluator can trust: for kernels and other fast code whose timings are noisy.

Imported by evaluators inside the sandbox (``from cambrian.evaluate.timing import
compare_speed``): standard library only, plus PyTorch when it is there and a GPU is in use.

- :func:`check_close` first: the candidate against the reference on several inputs (shapes,
  edge cases), so nothing wrong is ever timed.
- :func:`time_call`: warm-up calls, then repeated timed samples; each sample runs the
  function enough times to last ``min_sample_s`` (a 10 µs kernel is not timed one launch at
  a time) and is framed by device synchronisation, so queued GPU work is counted.
- :func:`compare_speed`: candidate and reference timed in the same process, interleaved round
  by round, each round in another order of the three (drift in clocks or load, and the position
  in a round, hit both alike), with the reference timed twice per round. The reference against itself measures the noise; a speed-up counts
  (``credited``) only when it exceeds that noise and its own uncertainty.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

BOOTSTRAP_RESAMPLES = 400
ROUND_ORDERS = tuple(itertools.permutations(("ref", "cand", "ref2")))
CONFIDENCE = 0.95
# Below this the noise estimate is not trusted: a speed-up must beat at least 1 %.
MIN_NOISE = 0.01


def cuda_synchronize() -> Callable[[], None] | None:
    """``torch.cuda.synchronize`` once PyTorch has started CUDA in this process, else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return torch.cuda.synchronize  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - a broken CUDA setup: time without it
        return None
    return None


@dataclass(frozen=True)
class Timing:
    """Seconds per call, one figure per timed sample."""

    per_call_s: tuple[float, ...]
    calls_per_sample: int

    @property
    def median_s(self) -> float:
        return statistics.median(self.per_call_s)

    @property
    def spread(self) -> float:
        """Relative spread: the interquartile range over the median."""
        if len(self.per_call_s) < 4:
            return 0.0
        quartiles = statistics.quantiles(self.per_call_s, n=4)
        return (quartiles[2] - quartiles[0]) / self.median_s if self.median_s else 0.0


@dataclass(frozen=True)
class Speedup:
    """How much faster the candidate is than the reference (> 1: faster)."""

    speedup: float  # median over rounds of reference time / candidate time
    low: float  # its confidence interval (bootstrap over rounds)
    high: float
    noise: float  # relative: how far the reference differs from itself (same interval)
    candidate: Timing
    reference: Timing

    @property
    def significant(self) -> bool:
        """The difference from 1 exceeds both the noise and the interval's width."""
        margin = math.log1p(max(self.noise, MIN_NOISE))
        return (math.log(self.low) > margin) or (math.log(self.high) < -margin)

    @property
    def credited(self) -> float:
        """The speed-up a search should be rewarded for: 1.0 when it is within the noise."""
        return self.speedup if self.significant else 1.0

    def as_metrics(self) -> dict[str, float]:
        return {"speedup": self.speedup, "speedup_low": self.low, "speedup_high": self.high,
                "noise": self.noise, "credited_speedup": self.credited,
                "candidate_median_s": self.candidate.median_s,
                "reference_median_s": self.reference.median_s}


def _calls_for(function: Callable[[], Any], synchronize: Callable[[], None] | None,
               min_sample_s: float) -> int:
    calls = 1
    while True:
        elapsed = _timed(function, calls, synchronize)
        if elapsed >= min_sample_s or calls >= 1 << 20:
            return calls
        calls = max(calls * 2, int(calls * min_sample_s / max(elapsed, 1e-9) * 1.2))


_clock: Callable[[], float] = time.perf_counter  # what the samples read (tests replace it)


def _timed(function: Callable[[], Any], calls: int,
           synchronize: Callable[[], None] | None) -> float:
    if synchronize is not None:
        synchronize()
    started = _clock()
    for _ in range(calls):
        function()
    if synchronize is not None:
        synchronize()
    return _clock() - started


def time_call(function: Callable[[], Any], *, warmup: int = 3, repeats: int = 20,
              min_sample_s: float = 0.002,
              synchronize: Callable[[], None] | None = None) -> Timing:
    """Times ``function()``: ``warmup`` untimed calls, then ``repeats`` samples.
    ``synchronize``: waits for queued device work (default: CUDA's, once it is started)."""
    for _ in range(warmup):
        function()
    sync = synchronize or cuda_synchronize()
    calls = _calls_for(function, sync, min_sample_s)
    samples = tuple(_timed(function, calls, sync) / calls for _ in range(repeats))
    return Timing(samples, calls)


def _bootstrap_median_interval(values: Sequence[float], rng: random.Random) -> tuple[float, float]:
    medians = sorted(statistics.median(rng.choices(values, k=len(values)))
                     for _ in range(BOOTSTRAP_RESAMPLES))
    tail = (1 - CONFIDENCE) / 2
    return (medians[int(tail * len(medians))],
            medians[min(len(medians) - 1, int((1 - tail) * len(medians)))])


def compare_speed(candidate: Callable[[], Any], reference: Callable[[], Any], *,
                  warmup: int = 3, rounds: int = 15, min_sample_s: float = 0.002,
                  synchronize: Callable[[], None] | None = None, seed: int = 0) -> Speedup:
    """Times `candidate` against `reference` in this process, interleaved (see the module)."""
    for _ in range(warmup):
        reference()
        candidate()
    sync = synchronize or cuda_synchronize()
    calls_reference = _calls_for(reference, sync, min_sample_s)
    calls_candidate = _calls_for(candidate, sync, min_sample_s)
    cand_times, ref_times, ref_again = [], [], []
    for index in range(rounds):
        # Every position in turn for each of the three, so no position effect (a cache warmed
        # by the call before) favours one of them.
        order = ROUND_ORDERS[index % len(ROUND_ORDERS)]
        for which in order:
            if which == "cand":
                cand_times.append(_timed(candidate, calls_candidate, sync) / calls_candidate)
            else:
                elapsed = _timed(reference, calls_reference, sync) / calls_reference
                (ref_times if which == "ref" else ref_again).append(elapsed)
    rng = random.Random(seed)
    log_ratios = [math.log(r / c) for r, c in zip(ref_times, cand_times, strict=True)]
    log_self = [math.log(a / b) for a, b in zip(ref_times, ref_again, strict=True)]
    low, high = _bootstrap_median_interval(log_ratios, rng)
    self_low, self_high = _bootstrap_median_interval(log_self, rng)
    noise = math.expm1(max(abs(self_low), abs(self_high),
                           abs(statistics.median(log_self))))
    return Speedup(speedup=math.exp(statistics.median(log_ratios)), low=math.exp(low),
                   high=math.exp(high), noise=noise,
                   candidate=Timing(tuple(cand_times), calls_candidate),
                   reference=Timing(tuple(ref_times), calls_reference))


def check_close(candidate: Callable[..., Any], reference: Callable[..., Any],
                inputs: Iterable[tuple[Any, ...]], *, rtol: float = 1e-5,
                atol: float = 1e-6) -> list[str]:
    """Runs both on every input; returns what differed (empty: all agree within tolerance).
    Tensors are compared with ``torch.allclose``, anything else numerically or by equality."""
    problems = []
    for index, args in enumerate(inputs):
        try:
            got = candidate(*args)
        except Exception as error:  # noqa: BLE001 - a candidate's failure is a finding
            problems.append(f"input {index}: the candidate raised {type(error).__name__}: "
                            f"{error}")
            continue
        wanted = reference(*args)
        problem = _difference(got, wanted, rtol, atol)
        if problem:
            problems.append(f"input {index} ({_describe(args)}): {problem}")
    return problems


def _describe(args: tuple[Any, ...]) -> str:
    return ", ".join(f"shape {tuple(arg.shape)}" if hasattr(arg, "shape") else repr(arg)[:40]
                     for arg in args)


def _difference(got: Any, wanted: Any, rtol: float, atol: float) -> str | None:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(wanted, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"returned {type(got).__name__}, not a tensor"
        if got.shape != wanted.shape:
            return f"shape {tuple(got.shape)}, expected {tuple(wanted.shape)}"
        if got.dtype != wanted.dtype:
            return f"dtype {got.dtype}, expected {wanted.dtype}"
        if got.device != wanted.device:
            return f"on {got.device}, expected {wanted.device}"
        if not torch.allclose(got, wanted, rtol=rtol, atol=atol, equal_nan=False):
            worst = (got.float() - wanted.float()).abs().nan_to_num(float("inf")).max().item()
            return f"differs by up to {worst:.3g} (rtol {rtol:g}, atol {atol:g})"
        return None
    if isinstance(wanted, (int, float)) and isinstance(got, (int, float)):
        return None if math.isclose(got, wanted, rel_tol=rtol, abs_tol=atol) else \
            f"{got!r}, expected {wanted!r}"
    return None if got == wanted else f"{got!r:.80}, expected {wanted!r:.80}"
