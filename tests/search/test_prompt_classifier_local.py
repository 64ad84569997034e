"""A few generations of examples/prompt_classifier with the real embedded model on both sides:
the 0.5B rewrites the prompt, and the evaluator (in the sandbox, reading the weights from
CAMBRIAN_MODELS_DIR) runs the 0.5B with each candidate prompt on a few labelled sentences. The
children are text, evaluated, with their per-example cases stored and their failures shown in
the next prompt. Slow (minutes on a small machine): ``local_llm``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.store_queries import sql

from cambrian.api import start
from cambrian.store.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "prompt_classifier"


@pytest.mark.local_llm
def test_the_embedded_model_evolves_a_prompt_scored_by_the_embedded_model(tmp_path: Path):
    evolution = start(EXAMPLE, run_dir=tmp_path / "run", overrides=[
        "llm.models=[" + json.dumps({"provider": "local",
                                     "model": "qwen2.5-coder-0.5b-instruct"}) + "]",
        "evolution.generations=2", "budget.max_llm_calls=4", "meta.enabled=false",
        "comprehension.enabled=false", "evaluation.timeout_s=600",
        'evaluation.env={"PROMPT_CLASSIFIER_LIMIT": "4"}',  # 4 sentences of each split
    ])
    summary = asyncio.run(evolution.run())
    evolution.store.close()
    assert summary.llm_calls >= 1
    store = Store.open(tmp_path / "run")
    try:
        rows = store.candidates.list()
        assert all(row.language == "text" for row in rows)
        initial = store.evaluations.latest(rows[0].id)
        assert initial.status == "ok", initial.error  # the model ran inside the sandbox
        assert len(initial.extra["cases"]) == 4 and "heldout_accuracy" in initial.private
        assert [case["expected"] for case in initial.extra["cases"]] == [
            "sports", "business", "science", "politics"]
        evaluated = [row for row in rows[1:] if row.status.evaluated]
        for row in evaluated:  # children are prompts, evaluated and scored like the initial
            assert "def " not in row.source and "EVOLVE-BLOCK" not in row.source
            result = store.evaluations.latest(row.id)
            if result.status == "ok":
                assert row.score == result.combined_score == result.public["accuracy"]
                assert len(result.extra["cases"]) == 4
        prompts = [json.loads(messages)[-1]["content"] for (messages,) in sql(
            store, "SELECT messages_json FROM contexts WHERE purpose='mutation'").fetchall()]
        assert prompts and all("## Current text\n```text\n" in p for p in prompts)
        if rows[0].score < 1.0:  # the initial prompt's failures reach the model
            assert "## Examples it got wrong" in prompts[0]
    finally:
        store.close()
