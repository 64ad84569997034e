"""``cambrian bench`` as a user runs it: killed mid-way in a subprocess, then run again to the end;
and its refusals through typer's CliRunner."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from bench_helpers import scripted_sets
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from typer.testing import CliRunner

from cambrian.cli import app

CLI = [sys.executable, "-m", "cambrian.cli"]


def evaluated(store_path: Path) -> int:
    if not store_path.exists():
        return 0
    connection = sqlite3.connect(store_path)
    try:
        return connection.execute("SELECT COUNT(*) FROM candidates "
                                  "WHERE status IN ('correct','incorrect')").fetchone()[0]
    except sqlite3.OperationalError:  # created but not yet initialised
        return 0
    finally:
        connection.close()


def bench_args(llm: ScriptedLLM, task: Path, out: Path) -> list[str]:
    sets = [arg for s in scripted_sets(llm) for arg in ("--set", s)]
    return ["bench", "--search", "shinka,random", "--tasks", str(task), "--budget", "4",
            "--seeds", "1", "--out", str(out), *sets]


def test_bench_killed_mid_run_continues_where_it_stopped(tmp_path: Path):
    task = write_counter_task(tmp_path / "counter", sleep=0.3)
    out = tmp_path / "out"
    first = out / "runs" / "shinka" / "counter" / "seed0" / "run.sqlite"
    with ScriptedLLM(incrementing, delay_s=0.1) as llm:
        process = subprocess.Popen([*CLI, *bench_args(llm, task, out), "--quiet"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True)
        deadline = time.monotonic() + 120
        while evaluated(first) < 3 and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        killed_at = evaluated(first)
        assert 3 <= killed_at < 5, "the kill must land mid-run"

        finished = subprocess.run([*CLI, *bench_args(llm, task, out)], capture_output=True,
                                  text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert "shinka" in finished.stdout and "random" in finished.stdout
    assert "final best" in finished.stdout
    results = json.loads((out / "results.json").read_text())
    outcomes = {r["variant"]: r["outcome"] for r in results["runs"]}
    assert outcomes == {"shinka": "resumed", "random": "ran"}
    assert all(r["evaluations"] == 4 for r in results["runs"])
    assert (out / "results.md").exists() and (out / "best_vs_evals.png").stat().st_size > 10_000


def test_cli_refuses_bad_requests_before_running(tmp_path: Path):
    task = write_counter_task(tmp_path / "counter")
    runner = CliRunner()
    with ScriptedLLM(incrementing) as llm:
        args = bench_args(llm, task, tmp_path / "out")
        unknown = runner.invoke(app, [a if a != "shinka,random" else "shinka,hillclimb"
                                      for a in args])
        owned = runner.invoke(app, [*args, "--set", "evolution.seed=3"])
        missing = runner.invoke(app, [a if a != str(task) else str(tmp_path / "nowhere")
                                      for a in args])
        assert llm.requests == []
    assert unknown.exit_code == 2 and "hill-climb" in unknown.output  # the close match
    assert owned.exit_code == 2 and "--seeds" in owned.output
    assert missing.exit_code == 2 and "nowhere" in missing.output
    assert not (tmp_path / "out").exists()


def test_cli_runs_a_grid_in_process(tmp_path: Path):
    task = write_counter_task(tmp_path / "counter")
    with ScriptedLLM(incrementing) as llm:
        result = CliRunner().invoke(app, [*bench_args(llm, task, tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if "counter" in line]
    assert [row.split()[1] for row in rows[:2]] == ["shinka", "random"]
    assert (tmp_path / "out" / "results.md").exists()
