"""Focused edits work on one function of the block, drawn at random (cambrian/mutate/focus.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from cambrian.config import PromptConfig
from cambrian.lang.languages import language_by_name
from cambrian.mutate.focus import block_functions, choose_focus, focused_instruction
from cambrian.mutate.prompts import ProgramView, PromptBuilder
from cambrian.task.folder import Task

ROOT = Path(__file__).resolve().parents[2]
PYTHON, CPP = language_by_name("python"), language_by_name("cpp")


def test_functions_inside_the_blocks_only():
    circles = (ROOT / "examples" / "circle_packing" / "initial.py").read_text()
    assert block_functions(circles, PYTHON) == ["construct_packing", "compute_max_radii"]
    contest = (ROOT / "examples" / "heuristic_contest" / "initial.cpp").read_text()
    names = block_functions(contest, CPP)
    assert "tree_priority" in names and "main" not in names  # main is outside the block
    assert block_functions("def broken(:\n", PYTHON) == []


def test_the_draw_spreads_over_the_functions_and_skips_single_function_blocks():
    circles = (ROOT / "examples" / "circle_packing" / "initial.py").read_text()
    draws = Counter(choose_focus(np.random.default_rng(seed), circles, PYTHON)
                    for seed in range(100))
    assert set(draws) == {"construct_packing", "compute_max_radii"}
    assert min(draws.values()) > 25
    single = "# EVOLVE-BLOCK-START\ndef only():\n    return 1\n# EVOLVE-BLOCK-END\n"
    assert choose_focus(np.random.default_rng(0), single, PYTHON) is None


def test_the_prompt_names_the_function(tmp_path: Path):
    source = (ROOT / "examples" / "circle_packing" / "initial.py").read_text()
    task = Task(name="t", root=tmp_path, initial_path=tmp_path / "initial.py",
                initial_source=source, evaluator_path=tmp_path / "e.py", contract="module",
                problem_statement=None, description=None, direction="maximize", language=PYTHON)
    builder = PromptBuilder(task, PromptConfig())
    messages = builder.build(kind="diff", fmt="function", intent="local_fix",
                             focus="compute_max_radii",
                             parent=ProgramView(1, source, 1.0, True),
                             budget_tokens=100_000, count_tokens=len)
    task_text = messages[-1].content.split("## Your task\n", 1)[1]
    assert task_text.startswith(focused_instruction("", "compute_max_radii").rstrip("\n"))
    assert "Pick one function or loop" in task_text
