"""`cambrian generalization RUN_DIR`: the public-vs-private table of a judged run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from cambrian.config.judge import JudgeConfigError
from cambrian.evaluate.judge.generalization import GeneralizationReport, generalization_report


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.6g}" if signed else f"{value:.6g}"


def report_table(report: GeneralizationReport) -> Table:
    table = Table(title=f"{report.task_name}: public best-so-far chain re-scored on "
                        f"{report.private_cases} private cases ({report.direction})")
    numbers = ("candidate", "gen", "public", "Δ public", "private", "Δ private")
    for column in numbers:
        table.add_column(column, justify="right")
    table.add_column("carried over")
    for index, step in enumerate(report.steps):
        if index == 0:
            verdict = "(start)"
        elif step.overfit:
            verdict = "[red]NO - public gain did not carry over[/red]"
        else:
            verdict = "[green]yes[/green]"
        private = _fmt(step.private_score) if step.private_score is not None else (
            f"[red]{step.private_status}[/red]")
        table.add_row(str(step.candidate_id), str(step.generation), _fmt(step.public_score),
                      _fmt(step.public_delta, signed=True), private,
                      _fmt(step.private_delta, signed=True), verdict)
    return table


def register(app: typer.Typer) -> None:
    """Adds the `generalization` command to the Cambrian CLI."""

    @app.command("generalization")
    def generalization(
        run_dir: Path = typer.Argument(..., help="A run directory of a judged task"),
        as_json: bool = typer.Option(False, "--json", help="Print the report as JSON"),
    ) -> None:
        """Re-score the public best-so-far chain on the held-out private cases."""
        console = Console()
        try:
            report = asyncio.run(generalization_report(run_dir))
        except (JudgeConfigError, FileNotFoundError, RuntimeError) as error:
            console.print(f"[red]error:[/red] {error}")
            raise typer.Exit(code=2) from None
        if as_json:
            typer.echo(json.dumps(report.to_dict(), indent=2))
            return
        if not report.steps:
            console.print("No correct, fully evaluated candidates in this run yet.")
            return
        console.print(report_table(report))
        for step in report.steps:
            if step.private_error:
                console.print(f"candidate {step.candidate_id} on private cases: "
                              f"{step.private_error}")
        flagged = len(report.overfit_steps)
        console.print(f"{flagged} of {max(0, len(report.steps) - 1)} public improvements did "
                      "not carry over to the private cases.")
