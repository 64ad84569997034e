"""Human guidance: stored changes with times, file and command both work on a running search,
and every proposal records which guidance version it saw."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import start
from cambrian.core.events import ControlChanged
from cambrian.meta.guidance import GuidanceBoard
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store


def test_append_replace_revert_and_clear(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    board = GuidanceBoard(Recorder(store), tmp_path / "run")
    assert board.current().id == 0 and board.current().text == ""
    with pytest.raises(ValueError, match="nothing|no guidance"):
        board.change("revert")
    board.change("append", "prefer vectorised numpy")
    board.change("append", "keep the radii positive")
    assert board.current().text == "prefer vectorised numpy\nkeep the radii positive"
    board.change("replace", "try a hexagonal layout")
    assert board.current().text == "try a hexagonal layout"
    assert (tmp_path / "run" / "guidance.md").read_text() == "try a hexagonal layout\n"
    board.change("revert")
    assert board.current().text == "prefer vectorised numpy\nkeep the radii positive"
    board.change("revert")  # reverting again walks further back
    assert board.current().text == "prefer vectorised numpy"
    board.change("clear")
    assert board.current().text == ""
    history = board.history()
    assert [v.action for v in history] == ["append", "append", "replace", "revert", "revert", "clear"]
    assert all(a.created_at <= b.created_at for a, b in zip(history, history[1:]))
    store.close()


def test_file_edits_are_taken_in_once(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    board = GuidanceBoard(Recorder(store), tmp_path / "run")
    (tmp_path / "run" / "guidance.md").write_text("use fewer loops\n")
    version = board.sync_file()
    assert version.text == "use fewer loops" and version.source == "file"
    assert board.sync_file().id == version.id  # unchanged file: no new version
    board.change("append", "and cache distances")  # the command rewrites the file...
    assert board.sync_file().text == "use fewer loops\nand cache distances"  # ...not re-read
    store.close()


def test_guidance_reaches_the_next_proposals_of_a_running_search(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"

    def reply(messages, index):
        if index == 1:
            (run_dir / "guidance.md").write_text("raise VALUE boldly\n")
        if index == 3:  # the command, from another process, while the run goes on
            subprocess.run([sys.executable, "-m", "cambrian.cli", "guide", str(run_dir),
                            "but stay below the limit"], check=True, capture_output=True)
        return incrementing(messages, index)

    with ScriptedLLM(reply) as llm:
        evolution = start(task, run_dir=run_dir, overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=6",
            "novelty.enabled=false", "meta.enabled=false",
        ])
        asyncio.run(evolution.run())
        evolution.store.close()
        prompts = [r[-1]["content"] for r in llm.requests]

    assert "raise VALUE boldly" not in prompts[0] + prompts[1]
    assert "Guidance from the person running this search: raise VALUE boldly" in prompts[2]
    assert "raise VALUE boldly\nbut stay below the limit" in prompts[-1]
    store = Store.open(run_dir)
    seen = [r.notes.get("guidance_id") for r in store.candidates.list() if r.id != 1]
    assert seen[:2] == [None, None] and seen[2] == 1 and seen[-1] == 2
    history = GuidanceBoard(Recorder(store)).history()
    assert [(v.action, v.source) for v in history] == [("replace", "file"), ("append", "cli")]
    store.close()


def test_guide_a_lineage_and_lower_the_budget_from_the_command_line(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cambrian", *args], capture_output=True,
                              text=True, check=False, env={**os.environ, "COLUMNS": "200"})

    def reply(messages, index):
        if index == 0:
            assert cli("guide", str(run_dir), "--target", "lineage:1",
                       "grow from the initial program").returncode == 0
            lowered = cli("control", str(run_dir), "budget", "-g", "3")
            assert lowered.returncode == 0 and "queued" in lowered.stdout, lowered.stderr
            wrong = cli("control", str(run_dir), "pause", "-g", "3")
            assert wrong.returncode == 2 and "go with the action budget" in wrong.stderr
        return incrementing(messages, index)

    with ScriptedLLM(reply) as llm:
        evolution = start(task, run_dir=run_dir, overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=20",
            "novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
        ])
        summary = asyncio.run(evolution.run())
        evolution.store.close()
        prompts = [r[-1]["content"] for r in llm.requests]

    assert summary.evaluations == 3 and summary.stop_reason == "generation budget reached"
    assert "grow from the initial program" not in prompts[0]
    assert all("grow from the initial program" in p for p in prompts[1:])
    store = Store.open(run_dir)
    applied = [stored.event for stored in store.events.list(ControlChanged)]
    store.close()
    assert [(e.action, e.source) for e in applied] == [("budget", "cli")]
    history = cli("guide", str(run_dir), "--target", "lineage:1")
    assert "lineage:1" in history.stdout and "grow from the initial program" in history.stdout
