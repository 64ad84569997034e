from __future__ import annotations

from pathlib import Path

import pytest
from support.scripted_llm import write_counter_task

from cambrian.config import build_config
from cambrian.task.folder import TaskError, load_task


def load(root: Path, **task_settings):
    return load_task(root, build_config([{"task": task_settings}] if task_settings else []))


def test_a_complete_folder_loads(tmp_path: Path):
    root = write_counter_task(tmp_path / "t")
    (root / "problem.md").write_text("Make VALUE large.")
    task = load(root)
    assert task.name == "t" and task.language.name == "python"
    assert task.contract == "module" and task.problem_statement == "Make VALUE large."
    assert task.program_filename == "program.py"
    assert "initial.py" in task.file_hashes()


def test_openevolve_file_names_are_recognised(tmp_path: Path):
    root = write_counter_task(tmp_path / "t")
    (root / "initial.py").rename(root / "initial_program.py")
    (root / "evaluate.py").rename(root / "evaluator.py")
    task = load(root)
    assert task.initial_path.name == "initial_program.py"
    assert task.evaluator_path.name == "evaluator.py"


@pytest.mark.parametrize(
    "breakage, message",
    [
        (lambda r: (r / "initial.py").unlink(), "no initial program"),
        (lambda r: (r / "evaluate.py").unlink(), "no evaluator"),
        (lambda r: (r / "initial.py").write_text(""), "is empty"),
        (lambda r: (r / "initial.py").write_text("# EVOLVE-BLOCK-START\nx = 1\n"), "initial.py"),
        (lambda r: (r / "evaluate.py").write_text("def evaluate(p:\n"), "syntax error at line 1"),
        (lambda r: (r / "evaluate.py").write_text("x = 1\n"), "evaluate.py"),
        (lambda r: (r / "initial.py").write_bytes(b"\xff\xfe\x00bad"), "not a UTF-8"),
    ],
)
def test_broken_folders_are_explained(tmp_path: Path, breakage, message):
    root = write_counter_task(tmp_path / "t")
    breakage(root)
    with pytest.raises(TaskError, match=message):
        load(root)


def test_missing_folder_and_bad_settings(tmp_path: Path):
    with pytest.raises(TaskError, match="does not exist"):
        load(tmp_path / "absent")
    root = write_counter_task(tmp_path / "t")
    with pytest.raises(TaskError, match="not a file"):
        load(root, initial_program="nope.py")
    with pytest.raises(TaskError, match="not a known language"):
        load(root, language="cobol-9000")


def test_the_improvement_step_s_score_is_read_from_the_folder(tmp_path: Path):
    root = write_counter_task(tmp_path / "t")
    given = {"mutation": {"improve_score": "score.py"}}
    with pytest.raises(TaskError, match="mutation.improve_score names 'score.py', which is not"):
        load_task(root, build_config([given]))
    (root / "score.py").write_text("def score_run(solution):\n    return solution\n")
    assert load_task(root, build_config([given])).step_score == (root / "score.py").read_text()
    assert load(root).step_score is None
    outside = {"mutation": {"improve_score": "../elsewhere.py"}}
    (tmp_path / "elsewhere.py").write_text("def score_run(solution):\n    return solution\n")
    with pytest.raises(TaskError, match="which is outside the task folder"):
        load_task(root, build_config([outside]))
