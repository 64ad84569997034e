"""`cambrian doctor`: what this machine offers and lacks for Cambrian (cambrian/api/doctor.py),
each missing item with the command that provides it; exit 1 when an essential is missing."""

from __future__ import annotations

import json
from dataclasses import asdict

import typer
from rich.markup import escape

from cambrian.api.doctor import diagnose
from cambrian.cli.app import app, console, fail

AREAS = {"python": "Python", "package": "Packages", "sandbox": "Sandbox",
         "language": "Languages (compiled and run in the sandbox)", "gpu": "GPU",
         "model": "Local models", "extra": "Extras (pip install 'cambrian[EXTRA]')"}


@app.command()
def doctor(
    lang: list[str] = typer.Option(
        [], "--lang", "-l", metavar="LANGUAGE",
        help="A language your tasks need (cpp, c, rust, javascript; repeatable): its "
             "toolchain becomes essential"),
    rehash: bool = typer.Option(False, "--rehash",
                                help="Hash the local models now instead of trusting their "
                                     "verification stamps"),
    gpu: bool = typer.Option(True, "--gpu/--no-gpu", help="Probe the GPU from the sandbox"),
    as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON"),
) -> None:
    """Say what this machine offers and lacks for Cambrian: Python, the sandbox's mechanisms,
    compilers per language, local models, extras and a GPU; each missing item with the command
    that fixes it. Exit code 0 when the essentials are there, 1 when one is missing."""
    try:
        diagnosis = diagnose(languages=tuple(lang), rehash=rehash, gpu=gpu)
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        console.print_json(json.dumps({"essentials_ok": diagnosis.exit_code == 0,
                                       "checks": [asdict(c) for c in diagnosis.checks]}))
        raise typer.Exit(diagnosis.exit_code)
    area = None
    for check in diagnosis.checks:
        if check.area != area:
            area = check.area
            console.print(f"\n[bold]{AREAS.get(area, area)}[/]")
        mark = ("[green]ok[/]     " if check.ok else
                "[red]MISSING[/]" if check.essential else "[yellow]missing[/]")
        console.print(f"  {mark} {escape(check.name)}: {escape(check.detail)}",
                      highlight=False)
        if not check.ok and check.fix:
            console.print(f"          fix: {escape(check.fix)}", highlight=False)
    missing = diagnosis.essentials_missing
    if missing:
        names = ", ".join(check.name for check in missing)
        console.print(f"\n[bold red]essentials missing:[/] {escape(names)}", highlight=False)
    else:
        console.print("\n[bold green]the essentials are here[/] (missing items above are "
                      "optional)", highlight=False)
    raise typer.Exit(diagnosis.exit_code)
