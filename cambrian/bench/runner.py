"""Run a benchmark grid and write its results. Re-invoking the same benchmark skips the runs that
finished and resumes the one that was interrupted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cambrian.bench.aggregate import VariantTaskSummary, summarize
from cambrian.bench.metrics import RunRecord, read_record
from cambrian.bench.outputs import write_outputs
from cambrian.bench.runs import RunState, drive, evaluated_children, open_evolution, prepare
from cambrian.bench.spec import BenchCell, BenchPlan, BenchSpec, plan_bench
from cambrian.core.events import CandidateEvaluated, Event
from cambrian.llm.base import LLMError
from cambrian.search.engine import RunAborted
from cambrian.store.store import STORE_FILENAME, Store

_OUTCOMES = {RunState.NEW: "ran", RunState.RESUME: "resumed", RunState.COMPLETE: "skipped"}


def _ignore(*_: Any) -> None:
    return None


@dataclass
class BenchObserver:
    """Progress callbacks, for a display; each is optional."""

    # (cell, state, children already evaluated)
    run_started: Callable[[BenchCell, RunState, int], None] = _ignore
    # (cell, children evaluated, best score so far)
    evaluated: Callable[[BenchCell, int, float | None], None] = _ignore
    run_finished: Callable[[BenchCell, RunRecord], None] = _ignore


@dataclass
class BenchResults:
    plan: BenchPlan
    records: list[RunRecord]
    summaries: list[VariantTaskSummary]
    files: dict[str, Path] = field(default_factory=dict)


def _already_evaluated(cell: BenchCell) -> int:
    if not (cell.run_dir / STORE_FILENAME).exists():
        return 0
    store = Store.open(cell.run_dir)
    try:
        return evaluated_children(store)
    finally:
        store.close()


def run_cell(cell: BenchCell, budget: int, observer: BenchObserver) -> RunRecord:
    state = prepare(cell, budget)
    observer.run_started(cell, state, _already_evaluated(cell))
    error = ""
    if state is not RunState.COMPLETE:
        def on_event(event: Event) -> None:
            if isinstance(event, CandidateEvaluated):
                observer.evaluated(cell, event.evaluated, event.best_score)

        evolution = open_evolution(cell, state, budget, [on_event])
        try:
            drive(evolution)
        except (RunAborted, LLMError) as exc:
            # The store is intact and says why; the next invocation resumes this run.
            error = f"{type(exc).__name__}: {exc}"
    store = Store.open(cell.run_dir)
    try:
        return read_record(store, variant=cell.variant.name, task=cell.task.name, seed=cell.seed,
                           outcome="failed" if error else _OUTCOMES[state], budget=budget,
                           error=error)
    finally:
        store.close()


def run_plan(plan: BenchPlan, observer: BenchObserver | None = None) -> BenchResults:
    """Run every cell in turn, then aggregate and write the result files. An interruption
    (Ctrl-C, SIGTERM) propagates once the current run's store has recorded it."""
    observer = observer or BenchObserver()
    spec = plan.spec
    records = []
    for cell in plan.cells:
        record = run_cell(cell, spec.budget, observer)
        records.append(record)
        observer.run_finished(cell, record)
    summaries = summarize(records, spec.budget, spec.checkpoints)
    files = write_outputs(Path(spec.out_dir), spec, records, summaries)
    return BenchResults(plan=plan, records=records, summaries=summaries, files=files)


def run_bench(spec: BenchSpec, observer: BenchObserver | None = None) -> BenchResults:
    """Check the whole grid first (a mistyped key or algorithm fails before hours of runs), then
    run it."""
    return run_plan(plan_bench(spec), observer)
