"""Statistics over seeds on hand-made records: early stops, runs without a correct program yet,
checkpoints."""

from __future__ import annotations

import pytest

from cambrian.bench.aggregate import Spread, checkpoint_evaluations, padded_curve, summarize
from cambrian.bench.metrics import RunRecord


def record(seed: int, curve: list[float | None], *, variant: str = "v", correct: int = 1,
           proposals: int = 4, outcome: str = "ran") -> RunRecord:
    return RunRecord(variant=variant, task="t", seed=seed, run_dir=f"/runs/{seed}",
                     outcome=outcome, direction="minimize", curve=curve,
                     evaluations=max(0, len(curve) - 1), proposals=proposals, correct=correct,
                     llm_calls=10 + seed, wall_time_s=2.0 * (seed + 1))


def test_a_run_that_stopped_early_keeps_its_last_best():
    assert padded_curve([5.0, 4.0], 4) == [5.0, 4.0, 4.0, 4.0, 4.0]
    assert padded_curve([5.0, 4.0, 3.0, 2.0, 1.0, 0.5], 3) == [5.0, 4.0, 3.0, 2.0]
    assert padded_curve([], 2) == [None, None, None]


def test_spread_ignores_seeds_without_a_correct_program():
    spread = Spread.of([None, 2.0, 4.0])
    assert (spread.mean, spread.low, spread.high, spread.n) == (3.0, 2.0, 4.0, 2)
    assert spread.std == pytest.approx(2 ** 0.5)
    assert Spread.of([7.0]).std == 0.0
    assert Spread.of([None, None]) == Spread(None, None, None, None, 0)


def test_checkpoints_round_up_to_whole_evaluations():
    assert [checkpoint_evaluations(f, 10) for f in (0.25, 0.5, 1.0)] == [3, 5, 10]
    assert checkpoint_evaluations(0.01, 4) == 1


def test_summary_over_seeds():
    records = [record(0, [None, 9.0, 7.0, 7.0, 3.0]),
               record(1, [None, None, 8.0], correct=0, proposals=3, outcome="failed"),
               record(0, [5.0, 5.0, 5.0, 5.0, 5.0], variant="w")]
    first, second = summarize(records, budget=4, checkpoints=(0.5, 1.0))
    assert (first.variant, second.variant) == ("v", "w")
    assert first.runs == 2 and first.failed_runs == 1 and first.stopped_early == 1
    assert first.curve[0].n == 0 and first.curve[1].mean == 9.0
    assert first.final_best.mean == pytest.approx(5.5) and first.final_best.low == 3.0
    assert [(c.evaluations, c.best.mean) for c in first.checkpoints] == [(2, 7.5), (4, 5.5)]
    assert first.proposal_success_rate == pytest.approx(1 / 7)
    assert first.llm_calls_mean == 10.5 and first.wall_time_s_mean == 3.0
    assert second.final_best == Spread(5.0, 0.0, 5.0, 5.0, 1)
