"""The typer application every command module registers on, and what they share: the two
consoles, number formats, and the one-line error exit.

The application's group is lazy: a command's modules (``cli/commands.py``) are imported when
the command is invoked, and ``cambrian --help`` lists the commands from that table, so neither
it nor ``--version`` imports the library. Iterating the group's commands imports them all."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import click
import typer
import typer.main
from rich.console import Console
from rich.markup import escape
from typer.core import TyperArgument, TyperCommand, TyperGroup

import cambrian
from cambrian.cli.commands import BY_NAME, COMMANDS
from cambrian.cli.terminal_text import printable


def _no_type_label(ctx: Any) -> None:
    return None


def _plain_help(command: Any) -> None:
    """Help without type labels (``<bool>``, ``<path>``, ``<list[str]>``): an option taking a
    value shows its METAVAR (its name in capitals unless it sets one); a flag or an argument
    shows nothing but its name."""
    _plain_params(command)
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub)


def _plain_params(command: Any) -> None:
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


class _LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands: those of the table load on first access by name."""

    def __init__(self, loaded: dict[str, click.Command],
                 load: Callable[[str], click.Command | None]) -> None:
        self.loaded = loaded
        self._load = load

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.loaded and name in BY_NAME:
            command = self._load(name)
            if command is not None:
                self.loaded[name] = command
        return self.loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self.loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self.loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self.loaded or name in BY_NAME

    def __iter__(self) -> Iterator[str]:
        names = [*BY_NAME, *(name for name in self.loaded if name not in BY_NAME)]
        return iter([name for name in names if self.get(name) is not None])

    def __len__(self) -> int:
        return len(list(iter(self)))


_IMPORTED: set[str] = set()


def _import_commands(name: str) -> None:
    """Import the modules of command ``name``; a module's ``register(app)`` is called once."""
    for module_name in BY_NAME[name].modules:
        module = importlib.import_module(module_name)
        if module_name not in _IMPORTED:
            _IMPORTED.add(module_name)
            register = getattr(module, "register", None)
            if register is not None:
                register(app)


class _Commands(TyperGroup):
    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        _plain_params(self)
        for sub in self.commands.values():
            _plain_help(sub)
        self.commands = _LazyCommands(dict(self.commands), self._load)
        self._listing = False

    @staticmethod
    def _load(name: str) -> click.Command | None:
        _import_commands(name)
        built = typer.main.get_command(app)
        assert isinstance(built, _Commands)
        return built.commands.loaded.get(name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*BY_NAME, *(n for n in self.commands.loaded if n not in BY_NAME)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if self._listing and cmd_name in BY_NAME:  # the help lists the table's line
            return TyperCommand(name=cmd_name, help=BY_NAME[cmd_name].help)
        return self.commands.get(cmd_name)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


assert [entry.name for entry in COMMANDS] == list(BY_NAME)


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
