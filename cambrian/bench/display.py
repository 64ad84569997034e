"""The terminal side of a benchmark: a rich progress display while it runs, a table at the end.
Shared by ``cambrian bench`` and ``benchmarks/ablations.py``."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from cambrian.bench.metrics import RunRecord
from cambrian.bench.outputs import fmt, table_columns, table_row
from cambrian.bench.runner import BenchObserver, BenchResults, run_plan
from cambrian.bench.runs import RunState
from cambrian.bench.spec import BenchCell, BenchSpec, plan_bench


def _label(cell: BenchCell) -> str:
    return f"{cell.variant.name} / {cell.task.name} / seed {cell.seed}"


class ProgressDisplay:
    """Two bars: runs of the grid, and evaluations of the current run."""

    def __init__(self, console: Console, total_runs: int, budget: int, quiet: bool) -> None:
        self.console = console
        self.budget = budget
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[note]}"), TimeElapsedColumn(),
            console=console, disable=quiet, transient=False,
        )
        self.runs: TaskID = self.progress.add_task("runs", total=total_runs, note="")
        self.current: TaskID | None = None

    def observer(self) -> BenchObserver:
        return BenchObserver(run_started=self._started, evaluated=self._evaluated,
                             run_finished=self._finished)

    def _started(self, cell: BenchCell, state: RunState, evaluated: int) -> None:
        if self.current is not None:
            self.progress.remove_task(self.current)
        note = {RunState.NEW: "", RunState.RESUME: "resuming",
                RunState.COMPLETE: "done earlier, skipped"}[state]
        self.current = self.progress.add_task(_label(cell), total=self.budget,
                                              completed=min(evaluated, self.budget), note=note)

    def _evaluated(self, cell: BenchCell, evaluated: int, best: float | None) -> None:
        if self.current is not None:
            self.progress.update(self.current, completed=min(evaluated, self.budget),
                                 note=f"best {fmt(best)}")

    def _finished(self, cell: BenchCell, record: RunRecord) -> None:
        self.progress.advance(self.runs)
        if record.error:
            self.progress.console.print(f"[yellow]{_label(cell)} failed:[/] {record.error}")


def summary_table(results: BenchResults) -> Table:
    spec = results.plan.spec
    table = Table(title=f"budget {spec.budget} evaluations, {spec.seeds} seed(s)",
                  caption="best: mean ± std over seeds; success: correct / proposed children")
    for index, column in enumerate(table_columns(spec.checkpoints, compact=True)):
        table.add_column(column, justify="left" if index < 2 else "right", no_wrap=True)
    for summary in results.summaries:
        table.add_row(*table_row(summary, digits=4))
    return table


def print_results(console: Console, results: BenchResults) -> None:
    # Piped output has no width to respect; a wide table beats one folded into 80 columns.
    wide = console if console.is_terminal else Console(file=console.file, width=160)
    wide.print(summary_table(results))
    for name, path in results.files.items():
        console.print(f"{name}: {path}")


def run_with_progress(spec: BenchSpec, console: Console, quiet: bool = False) -> BenchResults:
    """Run the benchmark under a progress display (the grid is checked before it appears)."""
    plan = plan_bench(spec)
    display = ProgressDisplay(console, len(plan.cells), spec.budget, quiet)
    with display.progress:
        return run_plan(plan, display.observer())
