"""The parent's lineage history in mutation prompts (``prompt.history_programs``)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import start
from cambrian.search.history import lineage_history_note
from cambrian.store.store import Store


def _run(tmp_path: Path, steps: int) -> tuple[Store, list[list[dict[str, str]]]]:
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        sets = ["evolution.generations=5", "llm.models=[" + json.dumps(llm.model_config()) + "]",
                "novelty.enabled=false", "meta.enabled=false", "database.num_islands=1",
                "database.parent_selection=hill_climb", "evolution.max_parallel_evaluations=1",
                f"prompt.history_programs={steps}"]
        evolution = start(task, overrides=sets, run_dir=tmp_path / "run")
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
        return Store.open(tmp_path / "run"), list(llm.requests)


def test_prompts_show_the_last_steps_of_the_parents_lineage(tmp_path: Path):
    store, requests = _run(tmp_path, steps=2)
    last_prompt = requests[-1][-1]["content"]
    assert "How the current program came about" in last_prompt
    steps = re.findall(r'- program (\d+) from (\d+) \((\w+), score ([^ )]+).*?: "(.*)"',
                       last_prompt)
    assert len(steps) == 2  # the configured number, oldest first
    (first_child, first_parent, *_), (second_child, second_parent, *_) = steps
    assert second_parent == first_child  # one unbroken line of descent
    assert all("Increase the value" in step[4] for step in steps)
    assert "(better by" in last_prompt
    # The tag tells the trace how many steps each proposal saw.
    tagged = [r.notes.get("history_steps") for r in store.candidates.list("correct") if r.id != 1]
    assert tagged[0] is None and max(t or 0 for t in tagged) == 2


def test_history_can_be_switched_off(tmp_path: Path):
    _, requests = _run(tmp_path, steps=0)
    assert not any("How the current program came about" in m["content"]
                   for request in requests for m in request)


def test_the_initial_program_has_no_history(tmp_path: Path):
    store, _ = _run(tmp_path, steps=3)
    assert lineage_history_note(store, 1, 3) == ((), {})


def test_changes_that_did_not_beat_the_parent_are_listed_for_it(tmp_path: Path):
    from support.store_queries import add_candidate

    from cambrian.core.status import CandidateStatus
    from cambrian.search.history import tried_ideas_note

    store = Store.open(tmp_path / "run", create=True)

    def add(parent: int | None, status: str, score: float | None, description: str) -> int:
        candidate = add_candidate(store, generation=1, island=0, parent_id=parent,
                                  operator="diff", status=status, language="python",
                                  source=f"# {description}\n", description=description)
        if score is not None:
            store.candidates.update(candidate, status=CandidateStatus(status), score=score)
        return candidate

    parent = add(None, "correct", 5.0, "initial")
    add(parent, "correct", 4.0, "Sort the items by weight")
    add(parent, "incorrect", None, "Use a heap")
    add(parent, "correct", 6.0, "Cache the distances")  # it improved: not listed
    add(parent, "correct", 5.0, "Rename variables")
    add(parent, "pending", None, "Still running")
    notes, tags = tried_ideas_note(store, parent, 2)
    assert len(notes) == 1
    assert notes[0].splitlines()[1:] == ['  - "Use a heap" (failed)',
                                         '  - "Rename variables" (no better)']
    assert len(tags["tried_ideas"]) == 2
    assert '"Sort the items by weight" (worse: 4)' in tried_ideas_note(store, parent, 4)[0][0]
    assert tried_ideas_note(store, parent, 0) == ((), {})
    store.close()
