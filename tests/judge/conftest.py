"""Fixtures for judge tests: the "reach" task folder and evaluator builders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from judge_helpers import REACH_GEN, REACH_SCORE, reach_judge, write_task

from cambrian.evaluate.judge.evaluator import JudgedEvaluator
from cambrian.evaluate.judge.factory import build_judged_evaluator


@pytest.fixture
def reach_task(tmp_path: Path) -> Path:
    return write_task(tmp_path / "reach", {"gen.py": REACH_GEN, "score.py": REACH_SCORE})


@pytest.fixture(scope="session")
def shared_compile_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for tests that do not count compilations: each program compiles once."""
    return tmp_path_factory.mktemp("compile_cache")


@pytest.fixture
def make_evaluator(
    reach_task: Path, tmp_path: Path, shared_compile_cache: Path
) -> Callable[..., JudgedEvaluator]:
    def make(language: str, **overrides: Any) -> JudgedEvaluator:
        return build_judged_evaluator(
            reach_task, reach_judge(language, **overrides), run_dir=tmp_path / "run",
            compile_cache_dir=shared_compile_cache,
        )

    return make
