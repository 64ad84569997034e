"""Re-invoking a benchmark: interrupted runs are resumed, finished ones are left alone, and a run
directory never silently mixes settings."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from bench_helpers import grid
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql, stored_events

from cambrian.bench.runner import BenchObserver, run_bench
from cambrian.bench.spec import BenchCell, BenchError, Variant
from cambrian.config import ConfigError
from cambrian.store.store import Store


class SimulatedCrash(BaseException):
    """Stops the process the way Ctrl-C does (an ordinary exception in a display subscriber is
    logged and dropped: a broken display must not stop the run)."""


def crash_after(evaluations: int) -> BenchObserver:
    def evaluated(cell: BenchCell, done: int, best: float | None) -> None:
        if done >= evaluations:
            raise SimulatedCrash(f"crashed after {done} evaluations")

    return BenchObserver(evaluated=evaluated)


def session_events(run_dir: Path) -> list[str]:
    store = Store.open(run_dir)
    try:
        return [e["kind"] for e in stored_events(store, ) if e["kind"].startswith("session_")]
    finally:
        store.close()


def test_a_run_given_a_smaller_budget_is_continued(tmp_path: Path):
    task = write_counter_task(tmp_path / "counter")
    with ScriptedLLM(incrementing) as llm:
        short = run_bench(grid(llm, task, tmp_path / "out", budget=2, seeds=1,
                               algorithms=["hill-climb"]))
        calls = len(llm.requests)
        full = run_bench(grid(llm, task, tmp_path / "out", budget=4, seeds=1,
                              algorithms=["hill-climb"]))
    [before], [after] = short.records, full.records
    assert before.evaluations == 2 and after.evaluations == 4
    assert after.outcome == "resumed"
    assert after.curve[:3] == before.curve  # the first evaluations were kept, not redone
    assert len(llm.requests) > calls
    assert session_events(Path(after.run_dir)) == ["session_start", "session_end"] * 2


def test_an_interrupted_run_is_resumed_and_the_rest_of_the_grid_runs(tmp_path: Path):
    task = write_counter_task(tmp_path / "counter")
    with ScriptedLLM(incrementing) as llm:
        spec = grid(llm, task, tmp_path / "out", budget=4, seeds=1)
        with pytest.raises(SimulatedCrash):
            run_bench(spec, crash_after(2))
        first = spec.out_dir / "runs" / "shinka" / "counter" / "seed0"
        # Make it look killed (SIGKILL leaves no session_end at all).
        store = Store.open(first)
        try:
            sql(store, "DELETE FROM events WHERE kind='session_end'")
            evaluated_before = {r.id: r.score for r in store.candidates.list("correct", "incorrect")}
        finally:
            store.close()
        assert not (spec.out_dir / "runs" / "hill-climb").exists()  # never reached

        results = run_bench(spec)
    outcomes = {r.variant: r.outcome for r in results.records}
    assert outcomes == {"shinka": "resumed", "hill-climb": "ran"}
    assert all(r.evaluations == 4 for r in results.records)
    store = Store.open(first)
    try:
        after = {r.id: r.score for r in store.candidates.list("correct", "incorrect")}
    finally:
        store.close()
    assert after.items() >= evaluated_before.items()  # nothing evaluated before was lost
    assert results.records[0].wall_time_s > 0
    assert (spec.out_dir / "results.json").exists()


def test_a_run_that_stopped_by_itself_counts_as_finished(tmp_path: Path):
    task = write_counter_task(tmp_path / "counter")
    with ScriptedLLM(incrementing) as llm:
        spec = grid(llm, task, tmp_path / "out", budget=4, seeds=1, algorithms=["shinka"],
                    extra=("budget.max_llm_calls=2",))
        [record] = run_bench(spec).records
        calls = len(llm.requests)
        [again] = run_bench(spec).records
        assert len(llm.requests) == calls
    assert record.evaluations == 2 and "LLM call budget" in record.stop_reason
    assert again.outcome == "skipped"
    [summary] = run_bench(spec).summaries
    assert summary.stopped_early == 1
    assert len(summary.curve) == 5  # padded to the budget with the run's last best
    assert summary.final_best.mean == record.final_best


def test_a_run_directory_with_other_settings_is_refused(tmp_path: Path):
    task = write_counter_task(tmp_path / "counter")
    with ScriptedLLM(incrementing) as llm:
        run_bench(grid(llm, task, tmp_path / "out", budget=1, seeds=1, algorithms=["shinka"]))
        calls = len(llm.requests)
        with pytest.raises(BenchError, match="database.num_islands"):
            run_bench(grid(llm, task, tmp_path / "out", budget=1, seeds=1, algorithms=["shinka"],
                           extra=("database.num_islands=1",)))
        assert len(llm.requests) == calls


def test_the_grid_is_checked_before_anything_runs(tmp_path: Path):
    task = write_counter_task(tmp_path / "counter")
    with ScriptedLLM(incrementing) as llm:
        with pytest.raises(ConfigError, match="hill-climbing"):
            run_bench(grid(llm, task, tmp_path / "out", algorithms=["shinka", "hill-climbing"]))
        with pytest.raises(BenchError, match="--budget"):
            run_bench(grid(llm, task, tmp_path / "out", extra=("evolution.generations=3",)))
        with pytest.raises(ConfigError, match="database.num_island"):
            run_bench(grid(llm, task, tmp_path / "out", extra=("database.num_island=1",)))
        spec = grid(llm, task, tmp_path / "out")
        twice = spec.variants + (Variant("shinka", ()),)
        with pytest.raises(BenchError, match="unique"):
            run_bench(replace(spec, variants=twice))
        assert llm.requests == []
    assert not (tmp_path / "out").exists()
