"""The deletion-aware search (``trace_feedback``): the filter on children that re-add what their
lineage deleted, and the parent's deletion history in the prompt. Real runs: SQLite store,
sandboxed evaluator, the real OpenAI provider talking to the scripted server.

The scripted model, in each run:
  from program 1 (base 10, bonus 5)  -> program 2 (base 12, bonus 6): deletes both lines, 15 -> 18
  from program 2, first time         -> base 10, bonus 5, "+ 1": re-adds both deleted lines
                                        (2 of its 3 added lines, 67%)
  from program 2, afterwards         -> base 12, bonus 8: adds nothing the lineage deleted
Phase one evaluates program 2 alone; the run is then resumed for one more child, so every
proposal of phase two has program 2 (the best, under hill climbing) as its parent.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import numpy as np
from support.scripted_llm import ScriptedLLM
from support.store_queries import sql

from cambrian.api import resume, start
from cambrian.config import build_config
from cambrian.search.recycling import parent_view
from cambrian.store.store import Store

INITIAL = """# EVOLVE-BLOCK-START
def solve():
    base = 10
    bonus = 5
    return base + bonus
# EVOLVE-BLOCK-END


def run():
    return solve()
"""

EVALUATOR = """import runpy


def evaluate(program_path):
    return {"combined_score": float(runpy.run_path(program_path)["run"]())}
"""

HISTORY_HEADING = "Lines this lineage already deleted"


def block(base: int, bonus: int, extra: str = "") -> str:
    return f"def solve():\n    base = {base}\n    bonus = {bonus}\n    return base + bonus{extra}\n"


def recycling_model():
    recycled: list[int] = []

    def reply(messages: list[dict[str, str]], index: int) -> str:
        user = messages[-1]["content"]
        current = (int(re.search(r"base = (\d+)", user).group(1)),
                   int(re.search(r"bonus = (\d+)", user).group(1)))
        if current == (10, 5):
            new = block(12, 6)
        elif not recycled:
            recycled.append(index)
            new = block(10, 5, " + 1")
        else:
            new = block(12, 8)
        return f"Change the constants\n```python\n{new}```\n"

    return reply


def two_phase_run(tmp_path: Path, *sets: str) -> tuple[Store, list[list[dict[str, str]]]]:
    task = tmp_path / "task"
    task.mkdir(parents=True)
    (task / "initial.py").write_text(INITIAL)
    (task / "evaluate.py").write_text(EVALUATOR)
    with ScriptedLLM(recycling_model()) as llm:
        overrides = [
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=1",
            "database.num_islands=1", "database.parent_selection=hill_climb",
            "novelty.enabled=false", "meta.enabled=false", "mutation.schedule=off",
            "evolution.patch_types=[full]", "evolution.patch_type_probs=[1.0]", *sets]
        evolution = start(task, overrides=overrides, run_dir=tmp_path / "run")
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
        evolution = resume(tmp_path / "run", overrides=["evolution.generations=2"])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
        requests = list(llm.requests)
    return Store.open(tmp_path / "run"), requests


def evaluated_ids(store: Store) -> set[int]:
    return {r[0] for r in sql(store, "SELECT DISTINCT candidate_id FROM evaluations")}


def test_filter_rejects_a_child_that_re_adds_deleted_lines_and_keeps_one_that_does_not(
        tmp_path: Path):
    store, _ = two_phase_run(tmp_path)  # the defaults: deletion_filter reject, threshold 0.5
    [rejected] = store.candidates.list("rejected")
    assert rejected.parent_id == 2 and "base = 10" in (rejected.source or "")
    assert rejected.error.startswith("re-introduces lines its lineage already deleted: 2 of the "
                                     "3 lines it adds (67%, above the 50% threshold)")
    assert "`base = 10` (deleted by program 2)" in rejected.error
    assert "`bonus = 5` (deleted by program 2)" in rejected.error
    assert rejected.notes["recycled"] == "reject"
    assert rejected.notes["reintroduction_share"] == round(2 / 3, 4)
    assert rejected.id not in evaluated_ids(store)  # never evaluated
    # The generation resampled and kept a child that adds nothing the lineage deleted.
    kept = [r for r in store.candidates.list("correct") if r.id not in (1, 2)]
    assert [(r.parent_id, r.score) for r in kept] == [(2, 20.0)]
    assert kept[0].notes["reintroduction_share"] == 0.0 and "recycled" not in kept[0].notes
    assert kept[0].generation == rejected.generation
    store.close()


def test_filter_switched_off_lets_the_same_child_through(tmp_path: Path):
    store, _ = two_phase_run(tmp_path, "trace_feedback.deletion_filter=off")
    assert store.candidates.count("rejected") == 0
    child = store.candidates.list("correct")[-1]
    assert child.parent_id == 2 and child.score == 16.0  # the re-adding child, evaluated
    assert "base = 10" in (child.source or "")
    assert "reintroduction_share" not in child.notes and "recycled" not in child.notes
    store.close()


def test_penalised_children_are_evaluated_but_drawn_less_as_parents(tmp_path: Path):
    store, _ = two_phase_run(tmp_path, "trace_feedback.deletion_filter=penalise",
                             "trace_feedback.penalty=1.0")
    assert store.candidates.count("rejected") == 0
    child = store.candidates.list("correct")[-1]
    assert child.score == 16.0 and child.notes["recycled"] == "penalise"
    store.close()
    # The archive rebuilt from the store, sampled uniformly: programs 1, 2 and the penalised 3.
    evolution = resume(tmp_path / "run", overrides=["database.parent_selection=uniform"])
    try:
        evolution.restore()
        raw, penalised = np.random.default_rng(0), np.random.default_rng(0)
        view = parent_view(evolution.selector, next(f for f in evolution.slots.proposer.filters if f.name == "deletion"))
        draws = 900
        raw_share = sum(evolution.selector.sample(raw).parent_id == child.id
                        for _ in range(draws)) / draws
        penalised_share = sum(view.sample(penalised).parent_id == child.id
                              for _ in range(draws)) / draws
    finally:
        evolution.store.close()
    # Uniform over three: 1/3 of draws; redrawn every time it comes up: about 1/9.
    assert 0.27 < raw_share < 0.4
    assert 0.06 < penalised_share < 0.17
    # Nothing penalised, nothing changed: the view is the selector itself.
    assert parent_view(evolution.selector, None) is evolution.selector


def prompts_of(store: Store) -> list[str]:
    return [" ".join(m["content"] for m in json.loads(r[0]))
            for r in sql(store, "SELECT messages_json FROM contexts WHERE purpose='mutation' "
                                   "ORDER BY id")]


def test_deletion_history_reaches_the_stored_prompt_only_when_on(tmp_path: Path):
    store, _ = two_phase_run(tmp_path / "on")
    first, *later = prompts_of(store)
    assert HISTORY_HEADING not in first  # program 1's lineage has deleted nothing
    assert later and all(HISTORY_HEADING in prompt for prompt in later)
    assert "- `bonus = 5` — removed by program 2 (15 -> 18, better)" in later[0]
    assert "- `base = 10` — removed by program 2 (15 -> 18, better)" in later[0]
    from_two = [r for r in store.candidates.list() if r.parent_id == 2]
    assert from_two and all(r.notes.get("deletion_history") is True for r in from_two)
    store.close()

    store, _ = two_phase_run(tmp_path / "off", "trace_feedback.deletion_history_in_prompt=false")
    prompts = prompts_of(store)
    assert len(prompts) >= 2 and not any(HISTORY_HEADING in prompt for prompt in prompts)
    assert not any("deletion_history" in r.notes for r in store.candidates.list())
    store.close()


def test_switches_read_from_yaml_and_overrides():
    config = build_config([{"trace_feedback": {"deletion_filter": False}}],
                          ["trace_feedback.tune_operator=true"])
    assert config.trace_feedback.deletion_filter == "off"  # YAML's unquoted `off`
    assert config.trace_feedback.tune_operator is True
    assert build_config([]).trace_feedback.deletion_filter == "reject"
