"""A judged (contest-style) task evolved through the real engine: C++ compiled by g++, run on
generated cases, tiered stages stored one row each, private cases never evaluated or shown."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM
from support.store_queries import sql

from cambrian.api import start
from cambrian.store.store import Store
from cambrian.task.folder import TaskError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "heuristic_contest"
PRIORITY_LINE = "return (double)value / steps_there;"
VARIANTS = [
    "return value / (steps_there + 0.5 * steps_back);",
    "return (double)value * value / steps_there;",
    "return value / std::pow((double)steps_there, 2.0);",
]

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def ratio_tweak(messages: list[dict[str, str]], index: int) -> str:
    variant = VARIANTS[index % len(VARIANTS)]
    return ("Weigh the way back to the depot\n<<<<<<< SEARCH\n"
            f"    {PRIORITY_LINE}\n=======\n    {variant}\n>>>>>>> REPLACE\n")


def test_judged_task_runs_with_stages_stored(tmp_path: Path):
    with ScriptedLLM(ratio_tweak) as llm:
        evolution = start(EXAMPLE, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]",
            "evolution.generations=3", "evolution.patch_types=[diff]",
            "evolution.patch_type_probs=[1.0]", "novelty.enabled=false", "meta.enabled=false",
            "judge.public_seeds=[0,5]", "judge.tiers.quick_cases=2",
        ])
        summary = asyncio.run(evolution.run())
        evolution.store.close()
        prompts = [m["content"] for request in llm.requests for m in request]

    assert summary.evaluations == 3 and summary.initial_score is not None
    assert summary.best_score is not None and summary.best_score > summary.initial_score
    store = Store.open(tmp_path / "run")
    stages = sql(store, 
        "SELECT candidate_id, stage FROM evaluations ORDER BY id").fetchall()
    by_candidate: dict[int, list[str]] = {}
    for candidate_id, stage in stages:
        by_candidate.setdefault(candidate_id, []).append(stage)
    # The initial program has no reference yet: quick then full; every row set ends with main.
    assert by_candidate[1] == ["quick", "full", "main"]
    assert all(rows[-1] == "main" and rows[0] == "quick" for rows in by_candidate.values())
    main = store.evaluations.latest(1)
    assert main is not None and main.extra["cases"] and main.public["cases"] == 6
    # Compiler and case feedback reached the prompt; held-out cases never did.
    assert any("Worst cases:" in p and "seed-4" in p for p in prompts)
    assert not any("seed-1000" in p for p in prompts)
    store.close()


def test_broken_judge_section_is_a_task_error(tmp_path: Path):
    task = tmp_path / "task"
    shutil.copytree(EXAMPLE, task)
    (task / "score.py").unlink()
    with pytest.raises(TaskError, match="judge.scorer"):
        start(task, run_dir=tmp_path / "run")
