"""``cambrian guide`` and ``cambrian control``: steer a running search from a terminal, through
the same stored requests and versioned guidance as the web UI."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.table import Table

from cambrian.cli.app import app, console, fail
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store, StoreError


@app.command()
def guide(
    run_dir: Path = typer.Argument(..., help="The run to guide (it may be running now)"),
    text: str | None = typer.Argument(None, help="Guidance to add to every mutation prompt"),
    replace: bool = typer.Option(False, "--replace", help="Replace the guidance instead of appending"),
    revert: bool = typer.Option(False, "--revert", help="Undo the last guidance change"),
    clear: bool = typer.Option(False, "--clear", help="Remove all guidance"),
    target: str = typer.Option("", "--target", metavar="candidate:ID|lineage:ID",
                               help="Guide only the children of one candidate, or its whole "
                                    "lineage (default: every prompt)"),
) -> None:
    """Give a running search guidance (also: edit RUN_DIR/guidance.md). Without TEXT or an
    option, print the guidance history."""
    from cambrian.meta.guidance import GuidanceBoard

    try:
        store = Store.open(run_dir)
    except (FileNotFoundError, StoreError) as exc:
        fail(str(exc))
    try:
        board = GuidanceBoard(Recorder(store), run_dir)
        chosen = [flag for flag, on in (("--replace", replace), ("--revert", revert),
                                        ("--clear", clear)) if on]
        if len(chosen) > 1:
            fail(f"choose one of {', '.join(chosen)}")
        try:
            if revert or clear:
                version = board.change("revert" if revert else "clear", target=target)
            elif text is not None:
                version = board.change("replace" if replace else "append", text,
                                       target=target)
            else:
                table = Table(title="guidance history")
                for column in ("version", "time", "action", "source", "target",
                               "active guidance"):
                    table.add_column(column)
                for v in board.history(target or None):
                    table.add_row(str(v.id), time.strftime("%Y-%m-%d %H:%M:%S",
                                  time.localtime(v.created_at)), v.action, v.source,
                                  v.target or "every prompt", v.text or "—")
                console.print(table)
                return
        except ValueError as exc:
            fail(str(exc))
        console.print(f"guidance version {version.id} is active from the next proposal on:\n"
                      f"{version.text or '(none)'}")
    finally:
        store.close()




@app.command()
def control(
    run_dir: Path = typer.Argument(..., help="The running run to steer"),
    action: str = typer.Argument(..., metavar="pause|resume|stop|budget",
                                 help="pause or resume new proposals, stop cleanly after the "
                                      "work in flight, or change the budget"),
    generations: int | None = typer.Option(None, "--generations", "-g", metavar="N",
                                           help="New evaluation budget (budget)"),
    max_cost_usd: float | None = typer.Option(None, "--max-cost", metavar="USD",
                                              help="New money budget (budget)"),
    max_llm_calls: int | None = typer.Option(None, "--max-llm-calls", metavar="N",
                                             help="New LLM call budget (budget)"),
    max_tokens: int | None = typer.Option(None, "--max-tokens", metavar="N",
                                          help="New token budget (budget)"),
    max_wall_time_s: float | None = typer.Option(None, "--max-wall-time", metavar="SECONDS",
                                                 help="New wall-time budget (budget)"),
    confirm: bool = typer.Option(False, "--confirm", help="Apply a budget at or below what "
                                 "the run already used (it stops at once)"),
) -> None:
    """Pause, resume or stop a running search, or change its budget; the run applies the
    request at its next turn and records it."""
    from cambrian.search.control import queue_control
    from cambrian.search.control_checks import NeedsConfirmation

    values = {"generations": generations, "max_cost_usd": max_cost_usd,
              "max_llm_calls": max_llm_calls, "max_tokens": max_tokens,
              "max_wall_time_s": max_wall_time_s}
    payload = {key: value for key, value in values.items() if value is not None}
    try:
        store = Store.open(run_dir)
    except (FileNotFoundError, StoreError) as exc:
        fail(str(exc))
    try:
        answer = queue_control(Recorder(store), action, payload or None, source="cli",
                               confirm=confirm)
    except NeedsConfirmation as exc:
        fail(f"{exc}".replace('the API takes "confirm": true', "add --confirm"))
    except ValueError as exc:
        fail(str(exc))
    finally:
        store.close()
    console.print(f"request {answer.request_id} ({action}) queued: {answer.text}; the run "
                  "applies it at its next turn (its control event says whether it did)")
