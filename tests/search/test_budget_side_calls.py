"""Budget caps hold for every LLM call a run makes, not only mutations: the meta-scratchpad, the
co-evolved system prompt's rewrites and the novelty judge start no call once a cap is reached.
Real runs: the scripted OpenAI-compatible server, real store, real sandboxed evaluator."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql, stored_events

from cambrian.api import start
from cambrian.meta.prompt_archive import REWRITE_MARKER
from cambrian.store.store import Store

EXPENSIVE = {"price_input_per_mtok": 1000.0, "price_output_per_mtok": 5000.0}  # $0.2 per call

SIDE_CALLS = {
    # purpose in the contexts table -> settings that make it run after every evaluation
    "meta": ["meta.enabled=true", "meta.interval=1", "novelty.enabled=false"],
    "prompt_evolution": ["prompt_evolution.enabled=true", "prompt_evolution.mutate_every=1",
                         "meta.enabled=false", "novelty.enabled=false"],
}


def replies(messages: list[dict[str, str]], index: int) -> str:
    """Mutations, scratchpad notes and judge verdicts as usual; a fresh system prompt when asked
    to rewrite one."""
    if REWRITE_MARKER in messages[-1]["content"]:
        return f"You are a careful programmer (version {index}). Change one thing at a time."
    return incrementing(messages, index)


def judge_sets(llm: ScriptedLLM) -> list[str]:
    """Every proposal is 'too similar' (threshold 0.01), so each one asks the judge."""
    return ["meta.enabled=false", "novelty.enabled=true", "novelty.judge=true",
            "novelty.judge_when=always", "novelty.threshold=0.01", "novelty.embedding=openai", f"novelty.base_url={llm.base_url}",
            "novelty.embedding_model=embed-test"]


def capped_run(tmp_path: Path, llm: ScriptedLLM, model: dict, sets: list[str]):
    task = write_counter_task(tmp_path / "task")
    evolution = start(task, run_dir=tmp_path / "run", overrides=[
        "llm.models=[" + json.dumps(model) + "]", "evolution.generations=30", *sets])
    try:
        summary = asyncio.run(evolution.run())
    finally:
        evolution.store.close()
    return summary, Store.open(tmp_path / "run")


def purposes(store: Store) -> dict[str, int]:
    return {p: n for p, n in sql(store, "SELECT purpose, COUNT(*) FROM contexts GROUP BY purpose")}


@pytest.mark.parametrize("side", ["meta", "prompt_evolution", "novelty"])
def test_side_calls_respect_the_call_cap(tmp_path: Path, side: str):
    with ScriptedLLM(replies) as llm:
        sets = judge_sets(llm) if side == "novelty" else SIDE_CALLS[side]
        summary, store = capped_run(tmp_path, llm, llm.model_config(),
                                    [*sets, "budget.max_llm_calls=5"])
    assert summary.stop_reason.startswith("LLM call budget reached")
    calls = purposes(store)
    assert sum(calls.values()) <= 5
    assert calls.get(side, 0) >= 1  # the side call did run while budget was left
    skipped = stored_events(store, "llm_call_skipped")
    if side == "novelty":
        # The fifth call was a mutation: its judge call would have been the sixth.
        last = max(store.candidates.list(), key=lambda r: r.id)
        assert last.status == "rejected"
        assert "the novelty judge was not asked: LLM call budget reached" in last.error
    else:
        assert all(e["payload"]["reason"].startswith("LLM call budget") for e in skipped)
    assert store.candidates.count("pending") == 0


@pytest.mark.parametrize("side", ["meta", "prompt_evolution"])
def test_side_calls_respect_the_cost_and_token_caps(tmp_path: Path, side: str):
    with ScriptedLLM(replies) as llm:
        summary, store = capped_run(tmp_path / "cost", llm, llm.model_config(**EXPENSIVE),
                                    [*SIDE_CALLS[side], "budget.max_cost_usd=2.0"])
        assert summary.stop_reason.startswith("cost budget reached")
        assert store.contexts.total_cost() <= 2.0 + 1e-9
        assert purposes(store).get(side, 0) >= 1
        # 120 tokens per call: 1200 tokens is ten calls.
        summary, store = capped_run(tmp_path / "tokens", llm, llm.model_config(),
                                    [*SIDE_CALLS[side], "budget.max_tokens=1200"])
        assert summary.stop_reason.startswith("token budget reached")
        spent = sql(store, "SELECT SUM(prompt_tokens + completion_tokens) FROM contexts")
        assert spent.fetchone()[0] <= 1200
        assert purposes(store).get(side, 0) >= 1
