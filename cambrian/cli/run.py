"""``cambrian run`` and ``cambrian resume``: drive a run with a progress display."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cambrian.cli.app import SetOption, app, console, err, fail, fmt
from cambrian.cli.terminal_text import plain
from cambrian.config import ConfigError
from cambrian.core.events import (
    CandidateEvaluated,
    ControlChanged,
    EnvironmentFailing,
    Event,
    PreflightNote,
    RemoteScorerDown,
)
from cambrian.core.outcomes import RunOutcome
from cambrian.llm.base import LLMError
from cambrian.search.engine import Evolution, RunAborted, RunSummary
from cambrian.store.store import StoreError
from cambrian.task.folder import TaskError

UiOption = typer.Option(False, "--ui", help="Also serve the web UI of this run (cambrian ui)")
UiPortOption = typer.Option(8765, "--ui-port", metavar="PORT", help="Port of the --ui web UI")
TargetOption = typer.Option(
    None, "--target-score", metavar="SCORE",
    help="Stop once the best score reaches SCORE (>= when maximising, <= when minimising)")
PatienceOption = typer.Option(
    None, "--patience", metavar="N", help="Stop after N evaluations without a better best score")
QuietOption = typer.Option(False, "--quiet", "-q", help="No progress display")


def _early_stops(sets: list[str], target_score: float | None, patience: int | None) -> None:
    if target_score is not None:
        sets.append(f"evolution.target_score={target_score!r}")
    if patience is not None:
        sets.append(f"evolution.patience={patience}")


def _one_model(sets: list[str], model: str | None, api_base: str | None,
               api_key_env: str | None) -> None:
    """--model/--api-base/--api-key-env as the one llm.models entry (see api.model_entry)."""
    from cambrian.api import model_entry

    entry = model_entry(model, api_base, api_key_env)
    if entry is None:
        return
    if any(item.split("=", 1)[0].strip() in ("llm", "llm.models") for item in sets):
        raise ConfigError("give the model either with --model (--api-base, --api-key-env) or "
                          "with --set llm.models=..., not both")
    sets.append("llm.models=" + json.dumps([entry]))


def steering_line(event: ControlChanged) -> str:
    """A control request as the run's terminal shows it when the run applies it."""
    detail = event.detail
    if detail.get("refused"):
        return f"{event.action} request from {event.source} refused: {plain(detail['refused'])}"
    words = {"pause": "proposals paused (the work in flight finishes; resume to go on)",
             "resume": "proposals resumed", "stop": "stopping after the work in flight"}
    if event.action in words:
        return f"{words[event.action]} — by {event.source}"
    before = detail.get("before") or {}
    changes = ", ".join(f"{key} {before.get(key)} → {value}" for key, value in detail.items()
                        if key != "before")
    return f"budget changed by {event.source}: {plain(changes)}"


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
            progress.update(bar, completed=event.evaluated, best=fmt(event.best_score),
                            total=event.generations)
            if not quiet and not console.is_terminal:  # a log file gets a line per child
                console.print(f"evaluated {event.evaluated}/{event.generations}: candidate "
                              f"{event.candidate_id} {event.status} "
                              f"score {fmt(event.score)}, best {fmt(event.best_score)}")
        elif isinstance(event, ControlChanged):  # the progress line follows steering
            said = steering_line(event)
            if event.action == "pause" and "refused" not in event.detail:
                progress.update(bar, description="paused")
            elif event.action == "resume":
                progress.update(bar, description="evolving")
            elif event.action == "budget" and isinstance(event.detail.get("generations"), int) \
                    and "refused" not in event.detail:
                progress.update(bar, total=event.detail["generations"])
            if not quiet:
                console.print(said)
        elif isinstance(event, RemoteScorerDown):  # shown even with --quiet; the run goes on
            err.print(f"[bold yellow]warning:[/] remote scorer unavailable while judging candidate "
                      f"{event.candidate_id}; its local score stands. {plain(event.error)}")
        elif isinstance(event, PreflightNote):
            err.print(f"[bold yellow]note:[/] {plain(event.message)}")
        elif isinstance(event, EnvironmentFailing):  # shown even with --quiet
            err.print(f"[bold yellow]warning:[/] {plain(event.message)}")

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
    console.print(f"[bold]Stopped:[/] {plain(summary.stop_reason)}")
    best = (f"Best score: [bold green]{fmt(summary.best_score)}[/] (candidate {summary.best_id})"
            if summary.best_id is not None else "Best score: none (no correct program yet)")
    console.print(f"Initial score: {fmt(summary.initial_score)}   {best}")
    children = summary.evaluations - summary.tune_trials
    evaluated = (f"Evaluations: {summary.evaluations} ({children} children, "
                 f"{summary.tune_trials} tune trials)" if summary.tune_trials
                 else f"Evaluated children: {summary.evaluations}")
    console.print(f"{evaluated}   LLM calls: {summary.llm_calls}")
    where = (f"  (best program in {summary.run_dir / 'best'})" if summary.best_id is not None
             else f"  (failures by reason: cambrian status {summary.run_dir})")
    console.print(f"Results: {summary.run_dir}{where}")


@app.command()
def run(
    task_dir: Path = typer.Argument(..., help="Task folder (initial program + evaluator)"),
    config: Path | None = typer.Option(None, "--config", "-c", metavar="FILE",
                                       help="YAML config file"),
    overrides: list[str] | None = SetOption,
    run_dir: Path | None = typer.Option(None, "--run-dir", "-o", metavar="DIR",
                                        help="Where to store the run"),
    generations: int | None = typer.Option(None, "--generations", "-g", metavar="N",
                                           help="Children to evaluate"),
    search: str | None = typer.Option(None, "--search", metavar="NAME",
                                      help="Search algorithm (see `cambrian algorithms`)"),
    model: str | None = typer.Option(
        None, "--model", "-m", metavar="NAME",
        help="The one model to use: with --api-base any OpenAI-compatible server; without, "
             "qwen2.5-coder-1.5b-instruct/0.5b run locally, claude-* is Anthropic, gemini-* "
             "Gemini, any other name OpenAI (several models: llm.models in YAML)"),
    api_base: str | None = typer.Option(
        None, "--api-base", metavar="URL",
        help="Address of an OpenAI-compatible server (vLLM, Ollama, llama.cpp, DeepSeek...)"),
    api_key_env: str | None = typer.Option(
        None, "--api-key-env", metavar="VAR",
        help="Environment variable holding the API key (default: the provider's usual one)"),
    target_score: float | None = TargetOption,
    patience: int | None = PatienceOption,
    quiet: bool = QuietOption,
    ui: bool = UiOption,
    ui_port: int = UiPortOption,
) -> None:
    """Start a new evolution run on TASK_DIR."""
    from cambrian.api import RunExists, start
    from cambrian.cli.ui import reserve_ui_port

    sets = list(overrides or [])
    if generations is not None:
        sets.append(f"evolution.generations={generations}")
    if search is not None:
        sets.append(f"search.algorithm={search}")
    _early_stops(sets, target_score, patience)
    ui_socket = reserve_ui_port(ui_port) if ui else None  # before the run folder is made
    try:
        _one_model(sets, model, api_base, api_key_env)
        evolution = start(task_dir, config=config, overrides=sets, run_dir=run_dir)
    except (ConfigError, TaskError, RunExists, LLMError, FileNotFoundError, StoreError) as exc:
        fail(str(exc))
    console.print(f"Run directory: {evolution.run_dir}")
    _finish(evolution, quiet, ui_port if ui else None, new_run=True, ui_socket=ui_socket)


def _finish(evolution: Evolution, quiet: bool, ui_port: int | None = None,
            new_run: bool = False, ui_socket: object | None = None) -> None:
    from cambrian.api import discard_unstarted
    from cambrian.cli.ui import UIStartFailed, keep_serving, start_beside_run

    try:
        server = (start_beside_run(evolution.run_dir, ui_port, ui_socket)
                  if ui_port is not None else None)
    except UIStartFailed as exc:
        if new_run:  # nothing ran: no run folder is left behind
            discard_unstarted(evolution)
        else:
            evolution.store.close()
        fail(str(exc))
    try:
        summary = _drive(evolution, quiet)
    except (KeyboardInterrupt, asyncio.CancelledError):
        err.print("Interrupted. Nothing committed is lost; continue with: "
                  f"cambrian resume {evolution.run_dir}")
        raise typer.Exit(code=RunOutcome.INTERRUPTED.exit_code) from None
    except RunAborted as exc:
        if new_run and exc.before_start:  # no call was spent: a fresh `cambrian run` is the fix
            discard_unstarted(evolution)
            kept = ("no run folder was kept" if evolution.folder_before_run is None
                    else f"the run's files were removed from {evolution.run_dir}")
            fail(f"{exc}\n({kept})", code=exc.outcome.exit_code)
        fail(f"run stopped: {exc}\nThe store is intact; fix the cause and "
             f"`cambrian resume {evolution.run_dir}`.", code=exc.outcome.exit_code)
    _report(summary)
    if server is not None:
        keep_serving(server)
    if summary.outcome.exit_code:
        err.print(f"[bold yellow]exit {summary.outcome.exit_code}[/] ({summary.outcome.word}): "
                  "the run stopped before its evaluations were spent; see `cambrian status`.")
        raise typer.Exit(code=summary.outcome.exit_code)


@app.command()
def resume(
    run_dir: Path = typer.Argument(..., help="A run directory created by `cambrian run`"),
    config: Path | None = typer.Option(
        None, "--config", "-c", metavar="FILE",
        help="Settings over the stored ones; an OpenEvolve/ShinkaEvolve file is translated, "
             "its iterations counted on from the children so far (OpenEvolve's second phase)"),
    overrides: list[str] | None = SetOption,
    generations: int | None = typer.Option(None, "--generations", "-g", metavar="N",
                                           help="New total budget"),
    target_score: float | None = TargetOption,
    patience: int | None = PatienceOption,
    quiet: bool = QuietOption,
    ui: bool = UiOption,
    ui_port: int = UiPortOption,
) -> None:
    """Continue a stopped or killed run."""
    from cambrian.api import resume as resume_run
    from cambrian.cli.ui import reserve_ui_port

    sets = list(overrides or [])
    if generations is not None:
        sets.append(f"evolution.generations={generations}")
    _early_stops(sets, target_score, patience)
    ui_socket = reserve_ui_port(ui_port) if ui else None
    try:
        evolution = resume_run(run_dir, overrides=sets, config=config)
    except (ConfigError, TaskError, LLMError, FileNotFoundError, StoreError) as exc:
        fail(str(exc))
    _finish(evolution, quiet, ui_port if ui else None, ui_socket=ui_socket)


