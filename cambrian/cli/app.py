"""The typer application every command module registers on, and what they share: the two
consoles, number formats, and the one-line error exit."""

from __future__ import annotations

import typer
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Evolve programs with LLMs. Every run is a replayable trace.")
console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

SetOption = typer.Option(None, "--set", "-s", help="Override a config key: section.key=value")


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=code)
