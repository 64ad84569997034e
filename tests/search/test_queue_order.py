"""Children stored in one loop turn are evaluated in the order they were stored: of two equal
programs the earlier one is evaluated and the later one is its duplicate, however the turn's
finished tasks happen to be ordered. A replay stores children in the recorded order, so it can
then reach the same duplicates."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

from support.scripted_llm import ScriptedLLM, counter_reply, current_value, write_counter_task

from cambrian.api import start
from cambrian.core.status import CandidateStatus
from cambrian.store.store import Store

PAIRS = 8


def test_of_two_equal_children_stored_in_one_turn_the_earlier_is_evaluated(tmp_path: Path):
    # Both proposals in flight get the same program, answered at the same instant, so that
    # their children are stored and handed back to the loop together. The program is numbered
    # by the barrier's crossing, so a call with no partner (a retry, the last one) gets a
    # program of its own and never shifts the pairs after it.
    crossings = iter(range(1, 1000))
    crossing = [0]
    both_asked = threading.Barrier(2, action=lambda: crossing.__setitem__(0, next(crossings)))

    def same_program_per_pair(messages: list[dict[str, str]], index: int) -> str:
        try:
            both_asked.wait(timeout=5)
            value = 100 + crossing[0]
        except threading.BrokenBarrierError:
            both_asked.reset()
            value = 10_000 + index
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        wants_diff = "SEARCH" in first_user.split("## Your task")[-1]
        current = current_value(messages)
        return counter_reply(current, value - current, wants_diff)

    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(same_program_per_pair) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]",
            f"evolution.generations={PAIRS}", "evolution.max_parallel_evaluations=2",
            "evolution.max_proposals_in_flight=2", "novelty.enabled=false",
            "meta.enabled=false"])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    with Store.open(tmp_path / "run", read_only=True) as store:
        duplicates = store.candidates.list(CandidateStatus.DUPLICATE)
    assert len(duplicates) >= 2, [row.id for row in duplicates]  # else nothing was tested
    assert all(row.notes["duplicate_of"] < row.id for row in duplicates), \
        [(row.id, row.notes["duplicate_of"]) for row in duplicates]
