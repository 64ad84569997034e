"""Command line: ``cambrian run | resume | status | best | init | algorithms``, plus the command
groups registered by other packages (``trace``, ``report``, ``generalization``)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cambrian.config import ConfigError
from cambrian.core.events import CandidateEvaluated, Event, RemoteScorerDown
from cambrian.llm.base import LLMError
from cambrian.search.engine import Evolution, RunAborted, RunSummary
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store, StoreError
from cambrian.task.folder import TaskError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Evolve programs with LLMs. Every run is a replayable trace.")
console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

SetOption = typer.Option(None, "--set", "-s", help="Override a config key: section.key=value")


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def _drive(evolution: Evolution, quiet: bool) -> RunSummary:
    """Run the loop with a progress bar; SIGTERM stops it like Ctrl-C (store stays consistent)."""
    total = evolution.config.evolution.generations
    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("best {task.fields[best]}"), TimeElapsedColumn(),
        console=console, disable=quiet, transient=False,
    )
    bar = progress.add_task("evolving", total=total, best="—",
                            completed=evolution.evaluations_spent())

    def on_event(event: Event) -> None:
        if isinstance(event, CandidateEvaluated):
            progress.update(bar, completed=event.evaluated, best=_fmt(event.best_score))
            if not quiet and not console.is_terminal:  # a log file gets a line per child
                console.print(f"evaluated {event.evaluated}/{total}: candidate "
                              f"{event.candidate_id} {event.status} "
                              f"score {_fmt(event.score)}, best {_fmt(event.best_score)}")
        elif isinstance(event, RemoteScorerDown):  # shown even with --quiet; the run goes on
            err.print(f"[bold yellow]warning:[/] remote scorer unavailable while judging candidate "
                      f"{event.candidate_id}; its local score stands. {escape(event.error)}")

    evolution.subscribe(on_event)

    async def main() -> RunSummary:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await evolution.run()

    with progress:
        try:
            return asyncio.run(main())
        finally:
            evolution.store.close()


def _report(summary: RunSummary) -> None:
    console.print(f"[bold]Stopped:[/] {summary.stop_reason}")
    console.print(f"Initial score: {_fmt(summary.initial_score)}   "
                  f"Best score: [bold green]{_fmt(summary.best_score)}[/] "
                  f"(candidate {summary.best_id})")
    children = summary.evaluations - summary.tune_trials
    evaluated = (f"Evaluations: {summary.evaluations} ({children} children, "
                 f"{summary.tune_trials} tune trials)" if summary.tune_trials
                 else f"Evaluated children: {summary.evaluations}")
    console.print(f"{evaluated}   LLM calls: {summary.llm_calls}")
    console.print(f"Results: {summary.run_dir}  (best program in {summary.run_dir / 'best'})")


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=2)


@app.command()
def run(
    task_dir: Path = typer.Argument(..., help="Task folder (initial program + evaluator)"),
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML config file"),
    overrides: list[str] | None = SetOption,
    run_dir: Path | None = typer.Option(None, "--run-dir", "-o", help="Where to store the run"),
    generations: int | None = typer.Option(None, "--generations", "-g", help="Children to evaluate"),
    search: str | None = typer.Option(None, "--search", help="Search algorithm (see `cambrian algorithms`)"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Start a new evolution run on TASK_DIR."""
    from cambrian.api import RunExists, start

    sets = list(overrides or [])
    if generations is not None:
        sets.append(f"evolution.generations={generations}")
    if search is not None:
        sets.append(f"search.algorithm={search}")
    try:
        evolution = start(task_dir, config=config, overrides=sets, run_dir=run_dir)
    except (ConfigError, TaskError, RunExists, LLMError, FileNotFoundError, StoreError) as exc:
        _fail(str(exc))
    console.print(f"Run directory: {evolution.run_dir}")
    _finish(evolution, quiet)


def _finish(evolution: Evolution, quiet: bool) -> None:
    try:
        summary = _drive(evolution, quiet)
    except (KeyboardInterrupt, asyncio.CancelledError):
        err.print(f"Interrupted. Nothing committed is lost; continue with: cambrian resume {evolution.run_dir}")
        raise typer.Exit(code=130)
    except RunAborted as exc:
        _fail(f"run stopped: {exc}\nThe store is intact; fix the cause and `cambrian resume {evolution.run_dir}`.")
    _report(summary)


@app.command()
def resume(
    run_dir: Path = typer.Argument(..., help="A run directory created by `cambrian run`"),
    overrides: list[str] | None = SetOption,
    generations: int | None = typer.Option(None, "--generations", "-g", help="New total budget"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Continue a stopped or killed run."""
    from cambrian.api import resume as resume_run

    sets = list(overrides or [])
    if generations is not None:
        sets.append(f"evolution.generations={generations}")
    try:
        evolution = resume_run(run_dir, overrides=sets)
    except (ConfigError, TaskError, LLMError, FileNotFoundError, StoreError) as exc:
        _fail(str(exc))
    _finish(evolution, quiet)


@app.command()
def status(run_dir: Path = typer.Argument(...)) -> None:
    """Summarise a run: progress, scores, success rates, tokens and cost per model."""
    from cambrian.api import run_status
    from cambrian.status import share_rows

    try:
        st = run_status(run_dir)
    except (FileNotFoundError, StoreError) as exc:
        _fail(str(exc))
    table = Table(title=f"{st.task} ({st.direction})", show_header=False)
    table.add_row("children evaluated", f"{st.generations} / {st.budget}")
    table.add_row("candidates by status",
                  ", ".join(f"{k}: {v}" for k, v in sorted(st.by_status.items())))
    table.add_row("initial score", _fmt(st.initial_score))
    table.add_row("best score", f"{_fmt(st.best_score)} (candidate {st.best_id})")
    table.add_row("LLM calls", str(st.llm_calls))
    table.add_row("mutation calls yielding a program", _pct(st.proposal_success))
    table.add_row("evaluated children correct", _pct(st.correct_rate))
    if st.by_status.get("screened"):  # tiered judging: stopped at the quick stage
        table.add_row("evaluated children screened out", _pct(st.screened_rate))
    table.add_row("correct children beating parent", _pct(st.improvement_rate))
    if st.last_session:
        table.add_row("last session ended", st.last_session)
    if st.guidance_changes:
        table.add_row("human guidance", f"{st.guidance or '(cleared)'} "
                                        f"[{st.guidance_changes} change(s); `cambrian guide`]")
    console.print(table)
    if st.bandit_shares:
        arms = sorted({arm for _, shares in st.bandit_shares for arm in shares})
        bandit = Table(title="LLM arm probabilities over time (UCB1 bandit)")
        bandit.add_column("pulls", justify="right")
        for arm in arms:
            bandit.add_column(arm, justify="right")
        for pulls, shares in share_rows(st.bandit_shares):
            bandit.add_row(str(pulls), *(_pct(shares.get(arm)) for arm in arms))
        console.print(bandit)
    _model_table(st.models)


def _share(count: int, total: int) -> str:
    return f"{count}/{total} ({_pct(count / total if total else None)})"


def _model_table(models: list[Any]) -> None:
    """Per model: calls, what its proposals became, tokens and cost (the LLM ledger)."""
    table = Table(title="LLM ledger per model")
    for column in ("model", "LLM calls", "yielded a program", "evaluated correct",
                   "beat parent", "tokens", "cost $"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for m in models:
        failed = f", {m.failed_calls} failed" if m.failed_calls else ""
        table.add_row(m.model, f"{m.calls} ({m.mutation_calls} mutation{failed})",
                      _share(m.programs, m.mutation_calls), _share(m.correct, m.evaluated),
                      _share(m.improved, m.correct), f"{m.tokens:,}", f"{m.cost_usd:.4f}")
    console.print(table)
    console.print("yielded: of the model's mutation calls; correct: of its evaluated children; "
                  "beat parent: of its correct children.")


@app.command()
def best(
    run_dir: Path = typer.Argument(...),
    out: Path | None = typer.Option(None, "--out", "-o", help="File to write (default: run_dir/best/)"),
) -> None:
    """Write the best program of a run."""
    from cambrian.api import NoCorrectProgram
    from cambrian.api import best as write_best_program

    try:
        written = write_best_program(run_dir, out)
    except (FileNotFoundError, StoreError, NoCorrectProgram) as exc:
        _fail(str(exc))
    console.print(f"Best program (candidate {written.candidate_id}, score {_fmt(written.score)}) "
                  f"written to {written.path}")


@app.command()
def guide(
    run_dir: Path = typer.Argument(..., help="The run to guide (it may be running now)"),
    text: str | None = typer.Argument(None, help="Guidance to add to every mutation prompt"),
    replace: bool = typer.Option(False, "--replace", help="Replace the guidance instead of appending"),
    revert: bool = typer.Option(False, "--revert", help="Undo the last guidance change"),
    clear: bool = typer.Option(False, "--clear", help="Remove all guidance"),
) -> None:
    """Give a running search guidance (also: edit RUN_DIR/guidance.md). Without TEXT or an
    option, print the guidance history."""
    from cambrian.meta.guidance import GuidanceBoard

    try:
        store = Store.open(run_dir)
    except (FileNotFoundError, StoreError) as exc:
        _fail(str(exc))
    try:
        board = GuidanceBoard(Recorder(store), run_dir)
        chosen = [flag for flag, on in (("--replace", replace), ("--revert", revert),
                                        ("--clear", clear)) if on]
        if len(chosen) > 1:
            _fail(f"choose one of {', '.join(chosen)}")
        try:
            if revert or clear:
                version = board.change("revert" if revert else "clear")
            elif text is not None:
                version = board.change("replace" if replace else "append", text)
            else:
                table = Table(title="guidance history")
                for column in ("version", "time", "action", "source", "active guidance"):
                    table.add_column(column)
                for v in board.history():
                    table.add_row(str(v.id), time.strftime("%Y-%m-%d %H:%M:%S",
                                  time.localtime(v.created_at)), v.action, v.source, v.text or "—")
                console.print(table)
                return
        except ValueError as exc:
            _fail(str(exc))
        console.print(f"guidance version {version.id} is active from the next proposal on:\n"
                      f"{version.text or '(none)'}")
    finally:
        store.close()


@app.command()
def algorithms() -> None:
    """List the search algorithms `--search` accepts."""
    from cambrian.search.registry import algorithm_names, get_algorithm

    table = Table("name", "what it does")
    for name in algorithm_names():
        table.add_row(name, get_algorithm(name).description)
    console.print(table)


@app.command()
def init(
    task_dir: Path = typer.Argument(..., help="New task folder to create"),
    force: bool = typer.Option(False, help="Write into an existing, non-empty folder"),
) -> None:
    """Create a working task skeleton (initial program, evaluator, problem statement, config)."""
    from cambrian.api import init as init_task

    try:
        written = init_task(task_dir, force=force)
    except FileExistsError as exc:
        _fail(str(exc))
    for path in written:
        console.print(f"created {path}")
    console.print(f"Try it: cambrian run {task_dir} --generations 5")


def _register_command_groups() -> None:
    """Commands that live beside the code they drive."""
    from cambrian.evaluate.judge.cli import register as register_judge
    from cambrian.trace.cli import register as register_trace

    register_trace(app)
    register_judge(app)
    __import__("cambrian.bench.cli", fromlist=["register"]).register(app)


_register_command_groups()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
