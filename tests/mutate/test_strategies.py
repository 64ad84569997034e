"""The strategy menu of exploration proposals: concrete methods, weighted by their success in
the run and steered away from what the parent's lineage already tried."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import add_candidate

from cambrian.api import start
from cambrian.core.status import CandidateStatus
from cambrian.mutate.strategies import (
    GENERAL_STRATEGIES,
    PRIOR_SUCCESS_RATE,
    TRIED_IN_LINEAGE_FACTOR,
    StrategyMenu,
)
from cambrian.store.store import Store

A, B, C = "local search", "multi-start", "annealing"


def child(store: Store, parent: int | None, status: str, score: float | None,
          strategy: str | None = None) -> int:
    candidate = add_candidate(store, generation=1, island=0, parent_id=parent, operator="full",
                              status=status, language="python", source=f"X = {score}\n",
                              notes={"strategy": strategy} if strategy else {})
    if score is not None:
        store.candidates.update(candidate, status=CandidateStatus(status), score=score)
    return candidate


def test_untried_strategies_outweigh_what_the_lineage_tried(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    root = child(store, None, "correct", 1.0)
    built_with_a = child(store, root, "correct", 2.0, A)  # A worked once: rate (1 + 1) / 3
    child(store, built_with_a, "incorrect", None, B)  # B failed from this parent: (0 + 1) / 3
    menu = StrategyMenu([A, B, C], store)
    rates = menu.success_rates()
    assert rates[A] == (1 + PRIOR_SUCCESS_RATE * 2) / 3 and rates[B] == (PRIOR_SUCCESS_RATE * 2) / 3
    assert menu.tried_by_lineage(built_with_a) == {A, B}
    weights = menu.weights(built_with_a)
    raw = {A: rates[A] * TRIED_IN_LINEAGE_FACTOR, B: rates[B] * TRIED_IN_LINEAGE_FACTOR,
           C: PRIOR_SUCCESS_RATE}
    assert weights == {k: v / sum(raw.values()) for k, v in raw.items()}
    assert max(weights, key=weights.get) == C
    # Another line of programs has tried nothing yet: A's success in the run counts.
    other = child(store, None, "correct", 1.5)
    assert max(menu.weights(other), key=menu.weights(other).get) == A
    draws = [menu.choose(np.random.default_rng(seed), built_with_a).text for seed in range(200)]
    assert draws.count(C) > draws.count(A) and draws.count(C) > draws.count(B)
    store.close()


def test_brief_approaches_join_the_menu_once():
    menu = StrategyMenu([A, A, " "], store=None)  # type: ignore[arg-type]
    menu.add([B, A, ""])
    assert menu.strategies == [A, B]


def test_a_strategy_proposal_names_its_method_in_the_prompt_and_the_child(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=" + json.dumps([llm.model_config()]), "evolution.generations=4",
            "novelty.enabled=false", "mutation.types=[strategy]",
            "mutation.strategies=[\"Count up in steps of one\"]",
            "mutation.general_strategies=false"])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    prompts = [m[-1]["content"] for m in llm.requests if m and m[0]["role"] == "system"]
    assert prompts and all("Build this method into the program: Count up in steps of one"
                           in p for p in prompts)
    store = Store.open(tmp_path / "run")
    children = [r for r in store.candidates.list() if r.id != 1]
    assert children and all(r.notes.get("strategy") == "Count up in steps of one"
                            for r in children)
    store.close()


def test_general_strategies_are_concrete_methods():
    assert len(GENERAL_STRATEGIES) >= 6
    assert all(": " in s and len(s) < 400 for s in GENERAL_STRATEGIES)
