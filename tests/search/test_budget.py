"""Budget caps and pacing, on real runs with scripted models that report token usage."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import stored_events

from cambrian.api import start
from cambrian.store.store import Store

# The scripted server reports 100 prompt + 20 completion tokens per call.
EXPENSIVE = {"price_input_per_mtok": 1000.0, "price_output_per_mtok": 5000.0}  # $0.2 per call


def run(task: Path, run_dir: Path, models: list[dict], *sets: str):
    evolution = start(task, run_dir=run_dir, overrides=[
        "llm.models=" + json.dumps(models), "llm.selection=fixed", "evolution.generations=30",
        "novelty.enabled=false",
        *sets,
    ])
    try:
        summary = asyncio.run(evolution.run())
    finally:
        evolution.store.close()
    return summary, Store.open(run_dir)


def test_cost_cap_stops_the_run_cleanly_and_says_why(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        summary, store = run(task, tmp_path / "run", [llm.model_config(**EXPENSIVE)],
                             "budget.max_cost_usd=1.0")
    assert summary.stop_reason.startswith("cost budget reached")
    assert store.contexts.total_cost() <= 1.0 + 1e-9  # in-flight calls were counted: no overshoot
    assert store.candidates.count("pending") == 0
    assert stored_events(store, "session_end")[-1]["payload"]["reason"] == summary.stop_reason


def test_token_and_call_caps(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        summary, store = run(task, tmp_path / "a", [llm.model_config()], "budget.max_tokens=600")
        assert summary.stop_reason.startswith("token budget reached")
        assert store.contexts.count() == 5  # 120 tokens per call
        summary, store = run(task, tmp_path / "b", [llm.model_config()], "budget.max_llm_calls=3")
        assert summary.stop_reason.startswith("LLM call budget reached")
        assert store.contexts.count() == 3


def test_pacing_shifts_to_the_cheaper_model_when_spending_runs_ahead(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as pricey, ScriptedLLM(incrementing) as free:
        models = [pricey.model_config(name="pricey", weight=10.0, **EXPENSIVE),
                  free.model_config(name="free", weight=1.0)]
        # $2 for 30 generations: at $0.2 a call the pricey model is over schedule after 1-2 calls.
        summary, store = run(task, tmp_path / "run", models, "budget.max_cost_usd=2.0",
                             "evolution.generations=20")
    calls = {r.model: r.calls for r in store.contexts.ledger()}
    # Weighted 10:1 without pacing; with pacing the free model takes over.
    assert calls["free"] > calls["pricey"]
    assert store.contexts.total_cost() <= 2.0 + 1e-9
    # Pacing lets spending follow the schedule up to the cap, so the cap may be reached just
    # before the last evaluations; without pacing ($0.2 for 10 calls in 11) it would be reached
    # after about 11.
    assert summary.evaluations >= 16


def test_run_progress_follows_the_call_budget_when_it_binds_first(tmp_path: Path):
    """A run with 1000 generations and 4 calls is done when its calls are: the mutation
    schedule's exploration share decays over the calls (seed 002 §10.6)."""
    from cambrian.config import BudgetConfig
    from cambrian.search.budget import BudgetManager

    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        summary, store = run(task, tmp_path / "run", [llm.model_config()],
                             "evolution.generations=1000", "budget.max_llm_calls=4")
    assert store.contexts.count() == 4 and summary.evaluations < 10
    assert BudgetManager(BudgetConfig(max_llm_calls=4), store, 1000).progress(
        summary.evaluations) == 1.0
    assert BudgetManager(BudgetConfig(max_llm_calls=8), store, 1000).progress(
        summary.evaluations) == 0.5
    assert BudgetManager(BudgetConfig(), store, 1000).progress(
        summary.evaluations) == summary.evaluations / 1000
