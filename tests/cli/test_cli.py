"""The command line, run as a user runs it: in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.core.events import ContainmentChecked
from cambrian.store.store import Store

CLI = [sys.executable, "-m", "cambrian.cli"]


def cambrian(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def model_set(llm: ScriptedLLM) -> list[str]:
    return ["--set", "llm.models=[" + json.dumps(llm.model_config()) + "]",
            "--set", "novelty.enabled=false"]


def evaluated_rows(store_path: Path) -> dict[int, tuple]:
    connection = sqlite3.connect(store_path)
    try:
        rows = connection.execute(
            "SELECT id, generation, score, source_hash, status FROM candidates "
            "WHERE status IN ('correct','incorrect')").fetchall()
    except sqlite3.OperationalError:  # polled while the run was still creating its tables
        return {}
    finally:
        connection.close()
    return {r[0]: r[1:] for r in rows}


def test_resume_after_sigkill_loses_nothing(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", sleep=0.3)
    run_dir = tmp_path / "run"
    store_path = run_dir / "run.sqlite"
    with ScriptedLLM(incrementing, delay_s=0.2) as llm:
        process = subprocess.Popen(
            [*CLI, "run", str(task), "--run-dir", str(run_dir), "--quiet", "--generations", "12",
             *model_set(llm), "--set", "evolution.max_parallel_evaluations=2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if store_path.exists() and len(evaluated_rows(store_path)) >= 5:
                break
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        before = evaluated_rows(store_path)
        assert 5 <= len(before) < 13, "the kill must land mid-run"

        resumed = cambrian("resume", str(run_dir), "--quiet")
        assert resumed.returncode == 0, resumed.stderr

    after = evaluated_rows(store_path)
    for candidate_id, row in before.items():
        assert after[candidate_id] == row  # committed work is untouched
    assert len(after) == 13  # initial program + the 12 children of the budget
    connection = sqlite3.connect(store_path)
    assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert connection.execute("SELECT COUNT(*) FROM candidates WHERE status='pending'").fetchone()[0] == 0
    starts = connection.execute("SELECT COUNT(*) FROM events WHERE kind='session_start'").fetchone()[0]
    assert starts == 2
    generations = [r[0] for r in after.values()]
    assert len(generations) == len(set(generations))  # numbering continued, no reuse
    assert "Best score" in resumed.stdout


def test_status_best_and_init(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    with ScriptedLLM(incrementing) as llm:
        result = cambrian("run", str(task), "--run-dir", str(run_dir), "-g", "3", "-q", *model_set(llm))
    assert result.returncode == 0, result.stderr
    assert "Best score" in result.stdout and str(run_dir) in result.stdout

    status = cambrian("status", str(run_dir))
    assert status.returncode == 0
    for expected in ("children evaluated", "3 / 3", "best score", "LLM ledger", "scripted"):
        assert expected in status.stdout
    # What the sandbox provided in the session, as probed at its start (as root here: all).
    assert "sandbox" in status.stdout
    store = Store.open(run_dir)
    probes = store.events.of_type(ContainmentChecked)
    store.close()
    assert len(probes) == 1 and ("every mechanism active" in status.stdout) == (
        probes[0].missing == [])

    out = tmp_path / "best.py"
    best = cambrian("best", str(run_dir), "--out", str(out))
    assert best.returncode == 0
    assert "VALUE = " in out.read_text() and "VALUE = 1\n" not in out.read_text()

    skeleton = tmp_path / "new_task"
    created = cambrian("init", str(skeleton))
    assert created.returncode == 0
    assert {p.name for p in skeleton.iterdir()} == {"initial.py", "evaluate.py", "problem.md", "config.yaml"}
    again = cambrian("init", str(skeleton))
    assert again.returncode == 2 and "not empty" in again.stderr


def test_skeleton_task_runs_as_written(tmp_path: Path):
    skeleton = tmp_path / "new_task"
    assert cambrian("init", str(skeleton)).returncode == 0

    def tweak(messages, index):
        return ("Use more samples\n<<<<<<< SEARCH\ndef search(objective, budget=2000, seed=0):\n"
                "=======\ndef search(objective, budget=2000, seed=1):\n>>>>>>> REPLACE\n")

    with ScriptedLLM(tweak) as llm:
        result = cambrian("run", str(skeleton), "--run-dir", str(tmp_path / "run"), "-g", "1", "-q",
                          *model_set(llm), "--set", "evolution.patch_types=[diff]",
                          "--set", "evolution.patch_type_probs=[1.0]",
                          # the scripted reply is a diff: not the improvement step's score
                          "--set", "mutation.opening=[]")
    assert result.returncode == 0, result.stderr
    connection = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    statuses = [r[0] for r in connection.execute("SELECT status FROM candidates ORDER BY id")]
    assert statuses == ["correct", "correct"]


def test_bad_inputs_get_clear_errors(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    typo = cambrian("run", str(task), "--set", "evolution.generatons=3")
    assert typo.returncode == 2 and "did you mean 'generations'" in typo.stderr

    missing = cambrian("run", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr

    no_run = cambrian("status", str(tmp_path / "nothing"))
    assert no_run.returncode == 2 and "no run store" in no_run.stderr
