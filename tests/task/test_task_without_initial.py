"""A task folder may leave out the initial program when it has a problem statement and says
which language the LLM should write the first program in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from support.scripted_llm import COUNTER_MODULE_EVALUATOR

from cambrian.config import build_config
from cambrian.task.folder import TaskError, load_task

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "heuristic_contest"


def folder(root: Path, *, statement: bool = True, config: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "evaluate.py").write_text(COUNTER_MODULE_EVALUATOR.format(limit=1000, sleep=0))
    if statement:
        (root / "problem.md").write_text("Define VALUE and run(), which returns it.\n")
    if config:
        (root / "config.yaml").write_text(config)
    return root


def load(root: Path):
    return load_task(root, build_config([yaml.safe_load((root / "config.yaml").read_text())]
                                        if (root / "config.yaml").exists() else []))


def test_statement_and_language_make_a_task_without_initial_program(tmp_path: Path):
    task = load(folder(tmp_path / "t", config="task:\n  language: python\n"))
    assert not task.has_initial_program
    assert task.initial_path is None and task.initial_source is None
    assert task.language.name == "python" and task.program_filename == "program.py"
    assert task.contract == "module" and task.problem_statement


def test_without_a_statement_the_initial_program_is_still_required(tmp_path: Path):
    with pytest.raises(TaskError, match="no initial program") as info:
        load(folder(tmp_path / "t", statement=False, config="task:\n  language: python\n"))
    assert "problem statement" in str(info.value) and "task.language" in str(info.value)


def test_the_language_must_be_named(tmp_path: Path):
    with pytest.raises(TaskError, match="set task.language"):
        load(folder(tmp_path / "t"))


def test_a_named_initial_program_that_is_missing_stays_an_error(tmp_path: Path):
    root = folder(tmp_path / "t", config="task:\n  language: python\n  initial_program: start.py\n")
    with pytest.raises(TaskError, match="names 'start.py'"):
        load(root)


def test_a_judged_task_takes_the_language_from_its_judge_section(tmp_path: Path):
    root = tmp_path / "contest"
    shutil.copytree(EXAMPLE, root)
    (root / "initial.cpp").unlink()
    config = yaml.safe_load((root / "config.yaml").read_text())
    del config["task"]["initial_program"]
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    task = load(root)
    assert not task.has_initial_program
    assert task.language.name == "cpp" and task.program_filename == "program.cpp"
    assert task.contract == "judge"
