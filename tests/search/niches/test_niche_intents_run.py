"""A stagnant niche's intent mix reaches real proposals: a `--search niches` run whose scripted
model never improves the program and tags every program greedy (its one niche stagnates after the first child) and whose
`niches.stagnant_intents` weighs the strategy rewrite a thousand times asks for strategy rewrites
from then on; with the mix off, the schedule's own draw gives a mixture."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

from support.scripted_llm import (
    JUDGE_QUESTION,
    ScriptedLLM,
    counter_reply,
    current_value,
    write_counter_task,
)

from cambrian.api import start
from cambrian.core.status import CandidateStatus
from cambrian.meta.strategy_prompts import TAG_QUESTION
from cambrian.store.store import Store


def worse(messages: list[dict[str, str]], index: int) -> str:
    first_user = next(m["content"] for m in messages if m["role"] == "user")
    if TAG_QUESTION in first_user:
        return "FAMILY: greedy | IDEA: set VALUE"
    if JUDGE_QUESTION in messages[-1]["content"]:
        return "DIFFERENT"
    wants_diff = "SEARCH" in first_user.split("## Your task")[-1]
    return counter_reply(current_value(messages), -(index + 1), wants_diff)


def _intents(tmp_path: Path, name: str, mix: dict[str, float]) -> Counter[str]:
    task = write_counter_task(tmp_path / name / "task")
    with ScriptedLLM(worse) as llm:
        evolution = start(task, run_dir=tmp_path / name / "run", overrides=[
            "evolution.generations=10", "llm.models=[" + json.dumps(llm.model_config()) + "]",
            "novelty.enabled=false", "meta.enabled=false", "evolution.max_parallel_evaluations=1",
            # The newest program is not tagged yet when the next parent is drawn: its niche
            # ("untagged") has no mix; the tagged, stagnant one is made the likely pick.
            "niches.stagnation_window=1", "niches.new_intents={}", "niches.niche_alpha=10",
            "niches.stagnant_share=1",
            "niches.stagnant_intents=" + json.dumps(mix),
            "mutation.types=[refinement, strategy, local_fix, tuning]",
            "search.algorithm=niches"])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    store = Store.open(tmp_path / name / "run")
    try:
        children = [row for row in store.candidates.list() if row.id != 1
                    and row.status is not CandidateStatus.PENDING]
        return Counter(row.notes.get("intent", "?") for row in children[2:])
    finally:
        store.close()


def test_a_stagnant_niche_asks_for_strategy_rewrites(tmp_path: Path) -> None:
    steered = _intents(tmp_path, "steered", {"strategy": 1000.0})
    # (proposals drawn ahead, while a child is still being evaluated, may come from the newest
    # program's niche, not tagged yet: no mix there)
    assert sum(steered.values()) >= 6
    assert steered["strategy"] >= 0.7 * sum(steered.values()), steered
    plain = _intents(tmp_path, "plain", {})
    assert len(plain) > 1 and plain["strategy"] <= 0.5 * sum(plain.values()), plain
