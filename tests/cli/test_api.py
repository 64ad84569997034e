"""The Python API does what the command line does (the CLI is a thin layer over it): evolve a
task end to end, read the status, write the best program, create a task skeleton."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

import cambrian
from cambrian.api import NoCorrectProgram, RunExists
from cambrian.search.engine import RunAborted


def test_evolve_runs_a_task_end_to_end(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    events: list[str] = []
    with ScriptedLLM(incrementing) as llm:
        summary = cambrian.evolve(
            task, run_dir=tmp_path / "run",
            config={"evolution": {"generations": 4}, "meta": {"enabled": False}},
            overrides=["llm.models=[" + json.dumps(llm.model_config()) + "]",
                       "novelty.enabled=false"],
            subscribers=[lambda event: events.append(event.kind)])
        with pytest.raises(RunExists):
            cambrian.evolve(task, run_dir=tmp_path / "run")
    assert summary.stop_reason == "generation budget reached"
    assert summary.evaluations == 4 and summary.initial_score == 1.0
    assert summary.best_score is not None and summary.best_score > 1.0
    assert summary.llm_calls >= 4 and events.count("evaluated") == 5  # the initial program too

    status = cambrian.run_status(tmp_path / "run")
    assert status.generations == 4 and status.budget == 4
    assert (status.best_id, status.best_score) == (summary.best_id, summary.best_score)
    assert [m.model for m in status.models] == ["scripted"]

    written = cambrian.best(tmp_path / "run")
    assert written.path == tmp_path / "run" / "best" / "program.py"
    assert f"VALUE = {int(summary.best_score)}" in written.path.read_text()
    copy = cambrian.best(tmp_path / "run", tmp_path / "out" / "best.py")
    assert copy.path.read_text() == written.path.read_text()
    assert copy.candidate_id == summary.best_id


def test_best_and_status_errors(tmp_path: Path):
    with pytest.raises(FileNotFoundError):
        cambrian.run_status(tmp_path / "missing")
    task = write_counter_task(tmp_path / "task", limit=0)  # even the initial program fails
    with ScriptedLLM(lambda messages, index: "nothing useful") as llm:
        with pytest.raises(RunAborted, match="initial program does not pass"):
            cambrian.evolve(task, run_dir=tmp_path / "run", overrides=[
                "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=0",
                "novelty.enabled=false", "meta.enabled=false"])
    with pytest.raises(NoCorrectProgram):
        cambrian.best(tmp_path / "run")


def test_init_writes_a_task_that_loads(tmp_path: Path):
    from cambrian.api import resolve_config
    from cambrian.task.folder import load_task

    written = cambrian.init(tmp_path / "new")
    assert {p.name for p in written} == {"initial.py", "evaluate.py", "problem.md", "config.yaml"}
    task = load_task(tmp_path / "new", resolve_config(tmp_path / "new"))
    assert task.has_initial_program and task.evaluator_path.exists()
    with pytest.raises(FileExistsError):
        cambrian.init(tmp_path / "new")
    assert cambrian.init(tmp_path / "new", force=True)
