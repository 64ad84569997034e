"""``cambrian guide``: give a running search guidance."""

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
            fail(str(exc))
        console.print(f"guidance version {version.id} is active from the next proposal on:\n"
                      f"{version.text or '(none)'}")
    finally:
        store.close()


