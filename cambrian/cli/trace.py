"""Command-line hook: ``cambrian trace export|import|stats`` (here),
``cambrian trace label|agreement|tune|replay`` (:mod:`cambrian.cli.trace_analyses`) and
``cambrian report``.

``register(app)`` adds the commands to the main typer app, keeping this package's imports out
of the main CLI until a trace command actually runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from cambrian.cli.trace_analyses import register_analyses
from cambrian.cli.trace_format import _fail, _fmt, _pct, console


def export_command(
    run_dir: Path = typer.Argument(..., help="A run directory (or any readable trace)"),
    out: Path = typer.Argument(..., help="Folder to write the JSONL tables and blobs into"),
) -> None:
    """Export a run as EvoTrace JSONL tables plus content-addressed blobs."""
    from cambrian.trace.export import export_trace
    from cambrian.trace.importers import UnknownTraceFormat

    try:
        target = export_trace(run_dir, out)
    except (FileNotFoundError, UnknownTraceFormat) as exc:
        _fail(str(exc))
    meta = json.loads((target / "meta.json").read_text())
    counts = ", ".join(f"{k}: {v}" for k, v in meta["counts"].items())
    console.print(f"Exported to {target} ({counts}; {meta['blobs']} blobs)")


def import_command(
    src: Path = typer.Argument(..., help="Exported trace, ShinkaEvolve results folder or "
                                         "OpenEvolve checkpoint"),
    run_dir: Path = typer.Argument(..., help="New run directory to create"),
    task: Path | None = typer.Option(
        None, "--task", metavar="DIR",
        help="The peer run's task folder (evaluator, initial program), so that `cambrian "
             "resume` continues it; default: the folder holding an evaluator at or above SRC"),
) -> None:
    """Rebuild a Cambrian run store (run.sqlite) from a trace of any supported framework; a
    ShinkaEvolve or OpenEvolve run can then be continued with `cambrian resume`."""
    from cambrian.status import run_status
    from cambrian.store.store import Store
    from cambrian.trace.importers import UnknownTraceFormat, detect_format
    from cambrian.trace.to_store import import_to_store

    try:
        fmt = detect_format(src)
        target = import_to_store(src, run_dir, task_dir=task)
    except (FileNotFoundError, FileExistsError, UnknownTraceFormat, ValueError) as exc:
        _fail(str(exc))
    console.print(f"Imported {fmt} trace {src} into {target / 'run.sqlite'}")
    with Store.open(target) as store:
        info = store.runs.info()
        children = run_status(store).generations  # what `cambrian status` counts
    if info.framework in ("shinkaevolve", "openevolve"):
        if info.task_dir:
            console.print(f"{children} children, task folder {info.task_dir}; continue with: "
                          f"cambrian resume {target} --generations {children + 10}")
        else:
            console.print("No task folder found beside it: to continue it, import again "
                          "with --task DIR")


def stats_command(
    run_or_trace: Path = typer.Argument(..., help="A run directory or any readable trace"),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON"),
) -> None:
    """Static and cycling statistics of a run."""
    from cambrian.trace.cycling import analyse_cycling
    from cambrian.trace.importers import UnknownTraceFormat
    from cambrian.trace.loading import load_trace
    from cambrian.trace.static import analyse_static

    try:
        trace = load_trace(run_or_trace)
    except (FileNotFoundError, UnknownTraceFormat) as exc:
        _fail(str(exc))
    static = analyse_static(trace)
    cycling = analyse_cycling(trace)
    if as_json:
        typer.echo(json.dumps({"task": trace.run.task, "static": static.to_dict(),
                               "cycling": cycling.to_dict()}, indent=2))
        return
    table = Table(title=f"{trace.run.task} ({trace.run.framework}, {trace.run.direction})",
                  show_header=False)
    table.add_row("evaluated programs", str(len(static.programs)))
    table.add_row("best score", f"{_fmt(static.best_score, 6)} (candidate {_fmt(static.best_id)})")
    table.add_row("lineage depth of the best", _fmt(static.lineage_depth))
    table.add_row("best found at (normalised iteration)", _fmt(static.normalised_best_iteration))
    table.add_row("evaluations on dead branches",
                  f"{_pct(static.dead_branch_share)} ({static.dead_branch_evaluations} of "
                  f"{static.evaluated_children})")
    console.print(table)
    cycles = Table(title=f"Cycling over {len(cycling.edits)} edits")
    for column in ("scope", "added", "re-introduced", "literal", "tuning", "trivial", "slope",
                   "median span"):
        cycles.add_column(column, justify="left" if column == "scope" else "right")
    for name, scope in (("lineage", cycling.lineage), ("run", cycling.run)):
        split = scope.split()
        cycles.add_row(name, str(scope.counts.added), _pct(scope.share), _pct(split["literal"]),
                       _pct(split["tuning"]), _pct(split["trivial"]), _fmt(scope.slope),
                       _fmt(scope.median_span))
    console.print(cycles)


def _strategy_sections(run_dir: Path) -> list[dict[str, Any]]:
    """The search phases and strategy niches of a Cambrian run folder (none for other traces
    or a store this version cannot read)."""
    from cambrian.search.strategy_report import strategy_sections
    from cambrian.store.database import STORE_FILENAME
    from cambrian.store.store import Store, StoreError

    path = run_dir / STORE_FILENAME
    if not path.is_file():
        return []
    try:
        with Store.open(path, read_only=True) as store:
            return strategy_sections(store)
    except StoreError:
        return []


def report_command(
    run_dir: Path = typer.Argument(..., help="A run directory (or any readable trace)"),
    out: Path | None = typer.Option(None, "--out", "-o",
                                       help="HTML file to write (default: RUN_DIR/report.html)"),
) -> None:
    """Write a self-contained HTML report of a run."""
    from cambrian.trace.importers import UnknownTraceFormat
    from cambrian.trace.report import write_report

    target = out if out is not None else run_dir / "report.html"
    try:
        written = write_report(run_dir, target, extra_sections=_strategy_sections(run_dir))
    except (FileNotFoundError, UnknownTraceFormat) as exc:
        _fail(str(exc))
    console.print(f"Report written to {written}")


def register(app: typer.Typer) -> None:
    """Add the ``trace`` command group and the ``report`` command to ``app``."""
    trace_app = typer.Typer(add_completion=False, no_args_is_help=True,
                            help="Export, import and analyse run traces.")
    trace_app.command("export")(export_command)
    trace_app.command("import")(import_command)
    trace_app.command("stats")(stats_command)
    register_analyses(trace_app)
    app.add_typer(trace_app, name="trace")
    app.command("report")(report_command)
