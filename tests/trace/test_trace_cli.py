"""``cambrian trace export|import|stats`` and ``cambrian report`` through a typer app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from trace_builders import LINEAGE_RUN, build_run
from typer.testing import CliRunner

from cambrian.cli.trace import register
from cambrian.store.store import Store


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer(add_completion=False)

    @app.callback()
    def main() -> None:
        """Test root command."""

    register(app)
    return app


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return build_run(tmp_path / "run", LINEAGE_RUN)


def test_export_then_import(app: typer.Typer, run_dir: Path, tmp_path: Path):
    runner = CliRunner()
    exported = runner.invoke(app, ["trace", "export", str(run_dir), str(tmp_path / "export")])
    assert exported.exit_code == 0, exported.output
    assert "candidates: 7" in exported.output
    assert (tmp_path / "export" / "candidates.jsonl").exists()
    imported = runner.invoke(app, ["trace", "import", str(tmp_path / "export"),
                                   str(tmp_path / "copy")])
    assert imported.exit_code == 0, imported.output
    store = Store.open(tmp_path / "copy")
    try:
        assert store.candidates.count("correct") == 6
    finally:
        store.close()
    again = runner.invoke(app, ["trace", "import", str(tmp_path / "export"),
                                str(tmp_path / "copy")])
    assert again.exit_code == 2 and "already holds" in again.output


def test_stats_json_and_table(app: typer.Typer, run_dir: Path):
    runner = CliRunner()
    result = runner.invoke(app, ["trace", "stats", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    assert stats["static"]["lineage_depth"] == 3
    assert stats["static"]["dead_branch_share"] == pytest.approx(0.4)
    assert stats["cycling"]["lineage"]["share"] == pytest.approx(4 / 11)
    assert stats["cycling"]["run"]["counts"]["tuning"] == 1
    table = runner.invoke(app, ["trace", "stats", str(run_dir)])
    assert table.exit_code == 0, table.output
    assert "lineage depth of the best" in table.output and "36.4%" in table.output


def test_report_default_and_explicit_output(app: typer.Typer, run_dir: Path, tmp_path: Path):
    runner = CliRunner()
    default = runner.invoke(app, ["report", str(run_dir)])
    assert default.exit_code == 0, default.output
    assert (run_dir / "report.html").read_text().startswith("<!DOCTYPE html>")
    explicit = runner.invoke(app, ["report", str(run_dir), "--out", str(tmp_path / "r.html")])
    assert explicit.exit_code == 0 and (tmp_path / "r.html").exists()


def test_unknown_inputs_fail_cleanly(app: typer.Typer, tmp_path: Path):
    runner = CliRunner()
    (tmp_path / "empty").mkdir()
    for args in (["trace", "stats", str(tmp_path / "empty")],
                 ["trace", "export", str(tmp_path / "missing"), str(tmp_path / "out")],
                 ["trace", "import", str(tmp_path / "empty"), str(tmp_path / "new")],
                 ["report", str(tmp_path / "missing")]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "error:" in result.output
    assert not (tmp_path / "new" / "run.sqlite").exists()
