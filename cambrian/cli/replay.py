"""``cambrian replay RUN_DIR --to NEW_DIR [--from N [--model M]]``: re-execute a stored run
with every LLM reply served from its trace and say whether it reached the same archive, scores
and best program, or what differs (``cambrian/api/replay.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from cambrian.cli.app import app, console, err, fail, fmt
from cambrian.cli.terminal_text import plain
from cambrian.config import ConfigError
from cambrian.core.outcomes import RunOutcome
from cambrian.llm.base import LLMError
from cambrian.store.store import StoreError
from cambrian.task.folder import TaskError

SHOWN_DIFFERENCES = 20


@app.command()
def replay(
    run_dir: Path = typer.Argument(..., help="The run to replay (a folder `cambrian run` made)"),
    to: Path = typer.Option(..., "--to", metavar="NEW_DIR",
                            help="Where the replay is stored (a new folder)"),
    from_evaluation: int | None = typer.Option(
        None, "--from", metavar="N",
        help="Serve replies from the trace only up to the run's N-th evaluation (0: its "
             "initial program), then continue with a live model"),
    model: str | None = typer.Option(
        None, "--model", "-m", metavar="NAME",
        help="With --from: the live model to continue with, as for `cambrian run --model` "
             "(default: the run's own models)"),
    api_base: str | None = typer.Option(None, "--api-base", metavar="URL",
                                        help="With --model: an OpenAI-compatible server"),
    api_key_env: str | None = typer.Option(None, "--api-key-env", metavar="VAR",
                                           help="With --model: the variable holding its key"),
    task_dir: Path | None = typer.Option(None, "--task", metavar="DIR",
                                         help="The run's task folder, if it moved"),
) -> None:
    """Re-run a stored run, every LLM reply served from its trace, and compare the two.

    No model is called; evaluations run again. Exit 0 when the replay reached the same
    programs, scores, archive and best; 8 with what differs."""
    from cambrian.api.replay import ReplayError
    from cambrian.api.replay import replay as replay_run
    from cambrian.api.runs import RunExists

    try:
        report = replay_run(run_dir, to=to, from_evaluation=from_evaluation, model=model,
                            api_base=api_base, api_key_env=api_key_env, task_dir=task_dir)
    except (ReplayError, ConfigError, TaskError, RunExists, LLMError, StoreError,
            FileNotFoundError) as exc:
        fail(str(exc))
    except (KeyboardInterrupt, asyncio.CancelledError):
        err.print(f"Interrupted; the replay so far is in {to}.")
        raise typer.Exit(code=RunOutcome.INTERRUPTED.exit_code) from None
    comparison = report.comparison
    served = (f"evaluations up to {report.until}" if report.until is not None
              else "the whole run")
    console.print(f"Replayed {served} of {run_dir} into {to}: {report.served_calls} LLM "
                  f"replies served from the trace, no model called.")
    console.print(f"Replay ended: {plain(report.stop)} ({plain(report.stop_reason)})")
    original, replayed = comparison.best
    console.print(f"Best: original {_best(original)}, replay {_best(replayed)}")
    if report.identical:
        console.print(f"[bold green]Identical:[/] {comparison.compared} candidates (programs, "
                      "parents, evaluations), commit order"
                      + (", search state, LLM calls" if report.until is None else "")
                      + " and best are the same.")
    else:
        console.print(f"[bold red]Differs[/] ({len(comparison.differences)} differences over "
                      f"{comparison.compared} candidates):")
        for line in report.differences[:SHOWN_DIFFERENCES]:
            console.print(f"  {plain(line)}", highlight=False)
        if len(report.differences) > SHOWN_DIFFERENCES:
            console.print(f"  ... and {len(report.differences) - SHOWN_DIFFERENCES} more "
                          f"(all in {to / 'replay_report.json'})")
        if comparison.noisy:
            console.print("The evaluator is not deterministic: the same program scored "
                          f"differently for candidates {', '.join(map(str, comparison.noisy))}.")
        if comparison.first_divergence is not None:
            console.print(f"The decisions diverged at candidate {comparison.first_divergence}.")
    for note in report.notes:
        err.print(f"[bold yellow]note:[/] {plain(note)}")
    if report.continuation is not None:
        live = report.continuation
        console.print(f"Continued live with {plain(live.model)}: {plain(live.stop_reason)}; "
                      f"{live.evaluations} evaluations, {live.llm_calls} LLM calls in all, best "
                      f"{fmt(live.best_score)} (candidate {live.best_id})")
    raise typer.Exit(code=report.exit_code)


def _best(best: tuple[int, float | None] | None) -> str:
    return "none" if best is None else f"{fmt(best[1])} (candidate {best[0]})"
