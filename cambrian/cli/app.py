"""The typer application every command module registers on, and what they share: the two
consoles, number formats, and the one-line error exit."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperArgument, TyperGroup

import cambrian
from cambrian.cli.terminal_text import printable


def _no_type_label(ctx: Any) -> None:
    return None


def _plain_help(command: Any) -> None:
    """Help without type labels (``<bool>``, ``<path>``, ``<list[str]>``): an option taking a
    value shows its METAVAR (its name in capitals unless it sets one); a flag or an argument
    shows nothing but its name."""
    for param in [*command.params, command.get_help_option(typer.Context(command))]:
        if param is None:
            continue
        if isinstance(param, TyperArgument):
            param.metavar = param.metavar or param.name.upper()
            param.display_type_rich = _no_type_label
        elif getattr(param, "is_flag", False) or getattr(param, "count", False):
            param.display_type_rich = _no_type_label
        elif param.metavar is None:
            param.metavar = param.name.upper()
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub)


class _Commands(TyperGroup):
    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        _plain_help(self)


app = typer.Typer(add_completion=False, no_args_is_help=True, cls=_Commands,
                  help="Evolve programs with LLMs. Every run is a replayable trace.")
console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

SetOption = typer.Option(None, "--set", "-s", metavar="KEY=VALUE",
                         help="Override a config key: section.key=value (repeatable)")


def _print_version(value: bool) -> None:
    if value:
        console.print(f"cambrian {cambrian.__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print the version and exit"),
) -> None:
    """Evolve programs with LLMs. Every run is a replayable trace."""


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def fail(message: str, code: int = 2) -> None:
    # Plain text: "cambrian[local]" stays, and a candidate's error quoted in it cannot drive
    # the terminal.
    err.print(f"[bold red]error:[/] {escape(printable(message))}")
    raise typer.Exit(code=code)
