"""Mutation intents through the real loop: the scheduled intent's instruction is the prompt's
task, the intent is stored in the child's notes, and resuming rebuilds the success history."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql

from cambrian.api import resume, start
from cambrian.mutate.focus import focused_instruction
from cambrian.mutate.intents import INTENTS
from cambrian.mutate.prompts import TASK_INTENT
from cambrian.mutate.strategies import StrategyChoice
from cambrian.store.rows import CandidateRow
from cambrian.store.store import Store


def run(task: Path, run_dir: Path, llm: ScriptedLLM, *sets: str) -> dict[str, list[bool]]:
    evolution = start(task, run_dir=run_dir, overrides=[
        "llm.models=[" + json.dumps(llm.model_config()) + "]", "novelty.enabled=false",
        "meta.enabled=false", *sets,
    ])
    try:
        asyncio.run(evolution.run())
        schedule = evolution.slots.requests.mutation_schedule
        return {name: list(q) for name, q in schedule.history.items()} if schedule else {}
    finally:
        evolution.store.close()


def llm_children(store: Store) -> list[tuple[CandidateRow, int]]:
    """Children an LLM call produced, each with the id of that call."""
    context_ids = dict(sql(store, "SELECT id, context_id FROM candidates "
                                     "WHERE context_id IS NOT NULL AND id != 1").fetchall())
    return [(row, context_ids[row.id]) for row in store.candidates.list() if row.id in context_ids]


def task_text(store: Store, context_id: int) -> str:
    messages = json.loads(sql(store, "SELECT messages_json FROM contexts WHERE id=?",
                                        (context_id,)).fetchone()[0])
    user = next(m["content"] for m in messages if m["role"] == "user")
    return user.split("## Your task\n", 1)[1]


def test_intents_reach_the_prompts_and_the_notes_and_survive_resume(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        live_history = run(task, tmp_path / "run", llm, "evolution.generations=12")
        store = Store.open(tmp_path / "run")
        children = llm_children(store)
        assert children
        for row, context_id in children:
            intent = INTENTS.get(row.notes["intent"])
            assert row.operator == intent.kind  # the intent decides the patch kind
            # A strategy proposal names the concrete method it builds in (mutate/strategies.py).
            expected = (StrategyChoice(row.notes["strategy"]).instruction
                        if intent.name == "strategy" else intent.instruction)
            if "focus_function" in row.notes:  # mutate/focus.py
                expected = focused_instruction(expected, row.notes["focus_function"])
            assert task_text(store, context_id).startswith(expected)
        assert len({row.notes["intent"] for row, _ in children}) >= 2
        evaluated = [r for r in store.candidates.list("correct", "incorrect") if r.id != 1]
        refused = [r for r in store.candidates.list("patch_failed") if r.notes.get("reply_refused")]
        assert sum(len(h) for h in live_history.values()) == len(evaluated) + len(refused)
        assert any(any(h) for h in live_history.values())  # the counter task improves often
        store.close()

        resumed = resume(tmp_path / "run", providers=None, overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]"])
        try:
            rebuilt = {name: list(q) for name, q in resumed.slots.requests.mutation_schedule.history.items()}
        finally:
            resumed.store.close()
    assert rebuilt == live_history


def test_restricted_patch_kinds_restrict_the_intents(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        run(task, tmp_path / "run", llm, "evolution.generations=5",
            "evolution.patch_types=[full]", "evolution.patch_type_probs=[1.0]")
    store = Store.open(tmp_path / "run")
    intents = {r.notes.get("intent") for r in store.candidates.list() if r.id != 1}
    assert intents and intents <= {"strategy", "refactor"}
    store.close()


def test_schedule_off_keeps_the_classic_patch_kinds(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        history = run(task, tmp_path / "run", llm, "evolution.generations=5",
                      "mutation.schedule=off")
    assert history == {}
    store = Store.open(tmp_path / "run")
    children = llm_children(store)
    assert children and all("intent" not in row.notes for row, _ in children)
    for row, context_id in children:
        assert task_text(store, context_id).startswith(TASK_INTENT[row.operator])
    store.close()


def test_replies_that_cannot_be_used_count_against_their_intent(tmp_path: Path):
    """A model that cannot carry out full rewrites: those intents fade, and resume agrees."""
    task = write_counter_task(tmp_path / "task")

    def no_full_rewrites(messages, index):
        if "SEARCH" not in messages[1]["content"].split("## Your task")[-1]:
            return "I cannot rewrite all of it."
        return incrementing(messages, index)

    with ScriptedLLM(no_full_rewrites) as llm:
        live = run(task, tmp_path / "run", llm, "evolution.generations=10",
                   "mutation.explore_start=0.8", "mutation.explore_end=0.8")
        resumed = resume(tmp_path / "run", providers=None, overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]"])
        try:
            schedule = resumed.slots.requests.mutation_schedule
            rebuilt = {name: list(q) for name, q in schedule.history.items()}
            rewrite_tries = live["strategy"] + live["refactor"]
            assert rewrite_tries and not any(rewrite_tries)
            weights = schedule.weights(progress=0.0, has_inspirations=False)
            prior = schedule.config.floor + 0.5
            assert schedule.success_factor("strategy") < prior
            assert weights["strategy"] + weights["refactor"] < 0.8
        finally:
            resumed.store.close()
    assert rebuilt == live
