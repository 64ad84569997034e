"""The evaluators' timing helper on the CPU: warm-up and synchronisation, interleaved rounds,
and a speed-up that counts only beyond the noise; correctness checks before any timing."""

from __future__ import annotations

import random

import pytest

from cambrian.evaluate import timing
from cambrian.evaluate.timing import check_close, compare_speed, time_call


def work(size: int) -> int:
    return sum(index * index for index in range(size))


def test_time_call_warms_up_synchronises_and_batches_short_calls() -> None:
    calls: list[str] = []
    timing = time_call(lambda: calls.append("call"), warmup=2, repeats=5,
                       synchronize=lambda: calls.append("sync"), min_sample_s=0.001)
    assert calls[:2] == ["call", "call"]  # warm-up, untimed
    assert timing.calls_per_sample > 1  # a call far under a millisecond is timed in batches
    assert len(timing.per_call_s) == 5 and timing.median_s > 0
    assert calls.count("sync") >= 2 * 5  # every timed sample framed by synchronisation


def measured(candidate, reference):  # type: ignore[no-untyped-def]
    """A real difference, measured up to three times: noise on a loaded machine can hide one
    (the interval widens), never invent one, so the first significant result counts."""
    for _ in range(3):
        speed = compare_speed(candidate, reference, rounds=12, min_sample_s=0.01)
        if speed.significant:
            return speed
    return speed


def test_a_three_times_faster_candidate_counts() -> None:
    speed = measured(lambda: work(3_000), lambda: work(9_000))
    assert speed.significant and 1.8 < speed.speedup < 5.0, speed
    assert speed.credited == speed.speedup
    assert speed.low <= speed.speedup <= speed.high
    assert set(speed.as_metrics()) >= {"speedup", "noise", "credited_speedup"}


def test_a_slower_candidate_counts_as_slower() -> None:
    speed = measured(lambda: work(9_000), lambda: work(3_000))
    assert speed.significant and speed.credited < 0.6, speed


def test_the_same_code_is_credited_no_speed_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two calls of the same cost under noise (a clock the calls advance by 1 ms, each sample
    off by up to 40% at random, as a loaded machine makes it): no speed-up is credited,
    whatever the ratio of the medians came out as. A real clock would make this a timed test."""
    clock = [0.0]
    jitter = random.Random(3)

    def same_cost() -> None:
        clock[0] += 0.001 * (1 + 0.4 * jitter.random())

    monkeypatch.setattr(timing, "_clock", lambda: clock[0])
    speed = compare_speed(same_cost, same_cost, rounds=11)
    assert speed.credited == 1.0, speed

    def half_cost() -> None:  # under the same noise, half the cost is credited as about 2x
        clock[0] += 0.0005 * (1 + 0.4 * jitter.random())

    faster = compare_speed(half_cost, same_cost, rounds=11)
    assert faster.significant and 1.6 < faster.credited < 2.5, faster


def test_check_close_names_what_differs() -> None:
    torch = pytest.importorskip("torch")
    inputs = [(torch.ones(3, 4),), (torch.zeros(1, 1),)]

    def reference(x):  # type: ignore[no-untyped-def]
        return torch.softmax(x, dim=-1)

    assert check_close(reference, reference, inputs) == []
    wrong = check_close(lambda x: reference(x) * 1.01, reference, inputs)
    assert "input 0 (shape (3, 4)): differs by up to" in wrong[0]
    shape = check_close(lambda x: reference(x).T, reference, inputs)
    assert "shape (4, 3), expected (3, 4)" in shape[0]
    dtype = check_close(lambda x: reference(x).double(), reference, inputs)
    assert "dtype torch.float64" in dtype[0]

    def raising(x):  # type: ignore[no-untyped-def]
        raise ValueError("no kernel")

    assert "the candidate raised ValueError: no kernel" in check_close(raising, reference,
                                                                      inputs)[0]
    assert check_close(lambda: 2.0, lambda: 2.0 + 1e-9, [()]) == []
