"""evaluation.llm_feedback_weight (OpenEvolve's use_llm_feedback): a correct program's score is
blended with an LLM's rating of its code quality, both parts kept as metrics; a reply without a
rating leaves the evaluator's score. Real runs: the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql

from cambrian.api import resolve_config, start
from cambrian.search.quality_rating import parse_rating
from cambrian.store.store import Store

QUIET = ["novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
         "mutation.derive_moves=false"]


def rating_or_counter(reply: str):
    def respond(messages: list[dict[str, str]], index: int) -> str:
        if "Rate the code quality" in messages[-1]["content"]:
            return reply
        return incrementing(messages, index)
    return respond


def run(tmp_path: Path, llm: ScriptedLLM, *more: str) -> Path:
    task = write_counter_task(tmp_path / "task")
    evolution = start(task, run_dir=tmp_path / "run", overrides=[
        "llm.models=[" + json.dumps(llm.model_config()) + "]", *QUIET,
        "evolution.generations=2", "search.algorithm=hill-climb", *more])
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()
    return tmp_path / "run"


def test_parse_rating():
    assert parse_rating("QUALITY: 0.75") == 0.75 and parse_rating("quality: 1") is None
    assert parse_rating("Sure.\nQUALITY: 1.0\n") == 1.0 and parse_rating("QUALITY: 1.5") is None


def test_the_score_is_blended_with_the_rating(tmp_path: Path):
    with ScriptedLLM(rating_or_counter("QUALITY: 0.6")) as llm:
        run_dir = run(tmp_path, llm, "evaluation.llm_feedback_weight=0.5")
    with Store.open(run_dir) as store:
        rows = [r for r in store.candidates.list() if r.status == "correct"]
        assert len(rows) == 3  # the initial program and two children, all rated
        for row in rows:
            metrics = store.evaluations.latest(row.id).public
            assert metrics["llm_quality"] == 0.6
            assert row.score == pytest.approx(0.5 * metrics["evaluator_score"] + 0.5 * 0.6)
            assert metrics["value"] == metrics["evaluator_score"]
        purposes = [p for (p,) in sql(store, "SELECT purpose FROM contexts")]
    assert purposes.count("llm_feedback") == 3


def test_no_rating_leaves_the_evaluators_score(tmp_path: Path):
    with ScriptedLLM(rating_or_counter("It is rather good.")) as llm:
        run_dir = run(tmp_path, llm, "evaluation.llm_feedback_weight=0.5")
    with Store.open(run_dir) as store:
        initial = store.candidates.get(1)
        evaluation = store.evaluations.latest(1)
    assert initial.score == 1.0 and "llm_quality" not in evaluation.public
    assert "no code-quality rating: the reply held no QUALITY: line" in evaluation.text_feedback


def test_openevolve_use_llm_feedback_is_translated(tmp_path: Path):
    root = write_counter_task(tmp_path / "t")
    (root / "config.yaml").write_text(yaml.safe_dump({
        "max_iterations": 2, "evaluator": {"use_llm_feedback": True}}))
    assert resolve_config(root).evaluation.llm_feedback_weight == 0.1
    (root / "config.yaml").write_text(yaml.safe_dump({
        "max_iterations": 2,
        "evaluator": {"use_llm_feedback": True, "llm_feedback_weight": 0.25}}))
    assert resolve_config(root).evaluation.llm_feedback_weight == 0.25
