"""The wall-time cap: a run stops cleanly at it and says why, and a run resumed after a kill counts
only the time its sessions were active, not the time it was down."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql, stored_events

from cambrian.api import resume, start
from cambrian.config import BudgetConfig
from cambrian.search.budget import BudgetManager
from cambrian.store.store import Store

DOWNTIME_S = 3600.0
ACTIVITY = ("events", "candidates", "evaluations", "contexts")
SESSION_WORK = ("candidates", "evaluations", "contexts")  # what only a running session writes


def models(llm: ScriptedLLM) -> str:
    return "llm.models=[" + json.dumps(llm.model_config()) + "]"


def test_wall_time_cap_stops_the_run_cleanly_and_says_why(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", sleep=0.3)
    with ScriptedLLM(incrementing, delay_s=0.1) as llm:
        began = time.monotonic()
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            models(llm), "evolution.generations=500", "novelty.enabled=false",
            "meta.enabled=false", "budget.max_wall_time_s=2"])
        try:
            summary = asyncio.run(evolution.run())
        finally:
            evolution.store.close()
        wall = time.monotonic() - began
    assert summary.stop_reason.startswith("wall-time budget reached")
    assert 0 < summary.evaluations < 500
    assert wall < 2 + 10  # only evaluations already running finish after the cap
    store = Store.open(tmp_path / "run")
    assert stored_events(store, "session_end")[-1]["payload"]["reason"] == summary.stop_reason
    assert store.candidates.count("pending") == 0  # every proposed child was still evaluated
    last_call = sql(store, "SELECT MAX(created_at) FROM contexts").fetchone()[0]
    first_event = stored_events(store, "session_start")[0]["created_at"]
    assert last_call - first_event < 2 + 1  # no LLM call started after the cap
    store.close()


def session_span(store_path: Path, index: int) -> float:
    """Seconds from the index-th session start to the last commit before the next start."""
    connection = sqlite3.connect(store_path)
    starts = [r[0] for r in connection.execute(
        "SELECT created_at FROM events WHERE kind='session_start' ORDER BY id")]
    until = starts[index + 1] if index + 1 < len(starts) else float("inf")
    latest = max(connection.execute(
        f"SELECT COALESCE(MAX(created_at), 0) FROM {table} WHERE created_at >= ? AND created_at < ?",
        (starts[index], until)).fetchone()[0] for table in SESSION_WORK)
    connection.close()
    return latest - starts[index]


def kill_mid_run(task: Path, run_dir: Path, llm: ScriptedLLM) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "cambrian.cli", "run", str(task), "--run-dir", str(run_dir),
         "--quiet", "--generations", "40", "--set", models(llm), "--set", "novelty.enabled=false",
         "--set", "meta.enabled=false"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    store_path = run_dir / "run.sqlite"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            connection = sqlite3.connect(store_path)
            done = connection.execute(
                "SELECT COUNT(*) FROM candidates WHERE status='correct'").fetchone()[0]
            connection.close()
        except sqlite3.OperationalError:
            done = 0
        if done >= 4:
            break
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_a_resumed_run_does_not_count_the_time_it_was_down(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", sleep=0.2)
    run_dir = tmp_path / "run"
    store_path = run_dir / "run.sqlite"
    with ScriptedLLM(incrementing, delay_s=0.1) as llm:
        kill_mid_run(task, run_dir, llm)
        connection = sqlite3.connect(store_path)
        assert connection.execute("SELECT COUNT(*) FROM events WHERE kind='session_end'"
                                  ).fetchone()[0] == 0, "SIGKILL leaves no session_end"
        # The run was down for an hour: every row of the killed session is an hour older.
        for table in ACTIVITY:
            connection.execute(f"UPDATE {table} SET created_at = created_at - ?", (DOWNTIME_S,))
        connection.commit()
        connection.close()
        killed_active = session_span(store_path, 0)
        assert 0.5 < killed_active < 60

        evolution = resume(run_dir, overrides=["budget.max_wall_time_s=600",
                                               "evolution.generations=8"])
        assert evolution.ctx.budget.elapsed_s() == pytest.approx(killed_active, abs=0.5)
        try:
            summary = asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    assert summary.stop_reason == "generation budget reached"  # not the wall-time cap
    store = Store.open(run_dir)
    resumed_active = session_span(store_path, 1)
    later = BudgetManager(BudgetConfig(max_wall_time_s=600), store, 8)
    # Both sessions' active time, and nothing of the hour in between.
    assert later.elapsed_s() == pytest.approx(killed_active + resumed_active, abs=0.5)
    assert later.stop_reason() is None
    store.close()
