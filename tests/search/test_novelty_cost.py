"""``novelty.judge_when: cost``: the novelty judge is asked only when the evaluation it may save
costs more than the call, both measured in the run (real runs: the scripted OpenAI-compatible
server as model and judge, the counter task's evaluator, the bundled embeddings)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing
from support.store_queries import add_candidate
from test_novelty import novelty_run

from cambrian.config import BudgetConfig, RunConfig
from cambrian.core.evaluation import EvaluationResult
from cambrian.search.novelty_cost import JudgeCostModel
from cambrian.store.rows import NewContext
from cambrian.store.store import Store


def judged_run(tmp_path: Path, llm: ScriptedLLM, *sets: str, sleep: float = 0.0) -> Store:
    return novelty_run(tmp_path, llm, "meta.enabled=false", "novelty.threshold=0.5",
                       "novelty.judge=true", *sets, sleep=sleep)


def near_copies(store: Store) -> list[dict]:
    """The notes of the children the novelty filter found above the threshold."""
    return [row.notes for row in store.candidates.list("correct", "incorrect", "rejected")
            if row.id != 1 and row.notes.get("decided") not in (None, "embedding")]


def test_cost_is_the_default():
    assert RunConfig().novelty.judge_when == "cost"


def test_a_fast_evaluation_is_cheaper_than_a_slow_judge_call(tmp_path: Path):
    # Every call of the model takes 1.5 s; the counter task evaluates in milliseconds.
    with ScriptedLLM(incrementing, delay_s=1.5) as llm:
        store = judged_run(tmp_path, llm)
    assert store.contexts.count("novelty") == 0
    checked = near_copies(store)
    assert checked, "VALUE = n+k is a near-copy of VALUE = n under a 0.5 threshold"
    assert all(notes["decided"] == "cost" for notes in checked)
    assert all(notes["cost"].startswith("cheaper to evaluate (median evaluation ")
               for notes in checked)
    assert store.candidates.count("correct", "incorrect") == 4  # the near-copies evaluated


def test_a_slow_evaluation_is_worth_a_judge_call(tmp_path: Path):
    # An evaluation takes 1.5 s; the model answers at once.
    with ScriptedLLM(incrementing) as llm:
        store = judged_run(tmp_path, llm, sleep=1.5)
    assert store.contexts.count("novelty") >= 1
    judged = [notes for notes in near_copies(store) if notes["decided"] == "judge"]
    assert judged and all(notes["cost"].startswith("cheaper to judge") for notes in judged)


def test_always_asks_the_judge_whatever_it_costs(tmp_path: Path):
    with ScriptedLLM(incrementing, delay_s=1.5) as llm:
        store = judged_run(tmp_path, llm, "novelty.judge_when=always")
    assert store.contexts.count("novelty") >= 1
    assert all("cost" not in notes for notes in near_copies(store))


def stored_costs(tmp_path: Path, evaluation_s: float, call_s: float, usd: float) -> Store:
    store = Store.open(tmp_path / "run", create=True)
    program = add_candidate(store, generation=0, island=0, parent_id=None, operator="init",
                            status="correct", language="python", source="VALUE = 1\n")
    store.evaluations.add(program, EvaluationResult(status="ok", combined_score=1.0,
                                                    duration_s=evaluation_s))
    store.contexts.add(NewContext(purpose="mutation", model="judge", provider="openai",
                                  params={}, messages=[], response_text="x", cost_usd=usd,
                                  latency_s=call_s))
    return store


def test_nothing_measured_asks_the_judge(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    cost = JudgeCostModel(store, "judge").compare()
    assert cost.ask and cost.reason.startswith("no measured cost yet")


def test_a_priced_judge_counts_its_usd_at_the_budgets_rate(tmp_path: Path):
    store = stored_costs(tmp_path, evaluation_s=2.0, call_s=1.0, usd=0.01)
    # Without both caps seconds decide: 2 s of evaluation against a 1 s call.
    assert JudgeCostModel(store, "judge").compare().ask
    # 3,600 s for $1: the call's cent is 36 s of the run, dearer than the 2 s evaluation.
    budget = BudgetConfig(max_cost_usd=1.0, max_wall_time_s=3600)
    cost = JudgeCostModel(store, "judge", budget).compare()
    assert not cost.ask and "at the budget's rate" in cost.reason
    # A judge call measured since replaces the model's other calls as the estimate.
    store.contexts.add(NewContext(purpose="novelty", model="judge", provider="openai", params={},
                                  messages=[], response_text="SAME", latency_s=0.1))
    cost = JudgeCostModel(store, "judge", budget).compare()
    assert cost.ask and cost.judge_s == 0.1


def test_a_replay_decides_each_near_copy_as_the_recorded_run_did(tmp_path: Path):
    """A replay's judge replies come at once and its evaluations take times of their own: it
    takes the recorded decisions (evaluated without asking, here) and reaches the same run."""
    from cambrian.api.replay import replay_async

    with ScriptedLLM(incrementing, delay_s=1.5) as llm:
        judged_run(tmp_path, llm).close()
        asked = len(llm.requests)
        result = asyncio.run(replay_async(tmp_path / "run", to=tmp_path / "replay"))
        assert len(llm.requests) == asked, "a replay served from the trace called the model"
    assert result.identical, result.differences
    with Store.open(tmp_path / "replay", read_only=True) as replay:
        checked = near_copies(replay)
        assert checked and all(notes["decided"] == "cost" for notes in checked)
        assert replay.contexts.count("novelty") == 0
