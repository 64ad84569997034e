"""Output helpers of the ``cambrian trace`` commands (their own number formats)."""

from __future__ import annotations

import typer
from rich.console import Console

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code=2)


def _fmt(value: object, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"
