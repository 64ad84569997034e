"""How the proposer retries and cuts replies, through real runs of the loop (real store,
sandboxed evaluator, the OpenAI-compatible provider over HTTP; scripted replies)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql

from cambrian.api import start
from cambrian.store.store import Store

TUNABLE_INITIAL = """# EVOLVE-BLOCK-START
SCALE = 0.5
STEPS = 12
VALUE = 1


def helper(x):
    return x[0] + 1
# EVOLVE-BLOCK-END


def run():
    return VALUE
"""


def _run(task: Path, run_dir: Path, llm: ScriptedLLM, *sets: str) -> Store:
    overrides = ["llm.models=[" + json.dumps(llm.model_config()) + "]",
                 "novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
                 *sets]
    evolution = start(task, overrides=overrides, run_dir=run_dir)
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()
    return Store.open(run_dir)


def test_restart_style_sends_the_original_prompt_with_the_refusal_noted(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")

    def first_garbage(messages, index):
        return "I would think harder." if index == 0 else incrementing(messages, index)

    with ScriptedLLM(first_garbage) as llm:
        _run(task, tmp_path / "run", llm, "evolution.generations=1", "prompt.retry_style=restart")
        first, second = llm.requests[0], llm.requests[1]
    assert [m["role"] for m in second] == ["system", "user"]  # no assistant turn to copy from
    assert second[0] == first[0]  # the system prompt stays byte-identical (prompt cache)
    assert second[1]["content"].startswith(first[1]["content"])
    assert "Your previous reply to this request was refused" in second[1]["content"]
    assert "I would think harder." not in second[1]["content"]


def test_a_reply_repeating_the_parent_restarts_even_in_continue_style(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")

    def parent_first(messages, index):
        if index == 0:  # the current block, unchanged, in the asked-for format
            if "SEARCH" in messages[-1]["content"].split("## Your task")[-1]:
                return "Same.\n<<<<<<< SEARCH\nVALUE = 1\n=======\nVALUE = 1\n>>>>>>> REPLACE\n"
            return "Same.\n```python\n# EVOLVE-BLOCK-START\nVALUE = 1\n# EVOLVE-BLOCK-END\n```\n"
        return incrementing(messages, index)

    with ScriptedLLM(parent_first) as llm:
        store = _run(task, tmp_path / "run", llm, "evolution.generations=1",
                     "prompt.retry_style=continue")
        second = llm.requests[1]
    refused = store.candidates.list("patch_failed")
    assert len(refused) == 1
    assert [m["role"] for m in second] == ["system", "user"]
    assert "refused" in second[1]["content"]


def test_prose_after_the_code_block_is_cut_by_the_stop_sequence(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")

    def chatty(messages, index):
        return ("Raise it.\n```python\n# EVOLVE-BLOCK-START\nVALUE = 7\n# EVOLVE-BLOCK-END\n```\n"
                "\nThis change raises the value, which the scorer rewards.")

    with ScriptedLLM(chatty) as llm:
        store = _run(task, tmp_path / "run", llm, "evolution.generations=1",
                     "mutation.schedule=off", "evolution.patch_types=[full]",
                     "evolution.patch_type_probs=[1.0]")
    child = store.candidates.list("correct")[-1]
    assert child.id != 1 and child.score == 7.0
    params, response = sql(store, 
        "SELECT params_json, response_text FROM contexts WHERE id=(SELECT context_id FROM "
        "candidates WHERE id=?)", (child.id,)).fetchone()
    assert json.loads(params)["stop"] == ["\n```\n"]
    assert "scorer rewards" not in response  # the server stopped before the prose


def test_a_tuning_prompt_lists_the_lines_holding_settings(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", initial=TUNABLE_INITIAL)
    with ScriptedLLM(incrementing) as llm:
        _run(task, tmp_path / "run", llm, "evolution.generations=1", "mutation.types=[tuning]")
        prompt = llm.requests[0][-1]["content"]
    task_part = prompt.split("## Your task")[1]
    assert "numbers you can change" in task_part
    assert "- `SCALE = 0.5`" in task_part and "- `STEPS = 12`" in task_part
    # An upper-case constant is a setting even at 1; written inline, 0, 1 and 2 are structure,
    # not settings, and indices are never listed.
    assert "- `VALUE = 1`" in task_part and "x[0]" not in task_part


def test_after_an_unchanged_reply_the_retry_points_at_a_line_holding_a_setting(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", initial=TUNABLE_INITIAL)
    block = TUNABLE_INITIAL.split("# EVOLVE-BLOCK-START\n")[1].split("# EVOLVE-BLOCK-END")[0]

    def unchanged_twice(messages, index):
        if index < 2:
            return f"Same.\n```python\n# EVOLVE-BLOCK-START\n{block}# EVOLVE-BLOCK-END\n```\n"
        return incrementing(messages, index)

    with ScriptedLLM(unchanged_twice) as llm:
        _run(task, tmp_path / "run", llm, "evolution.generations=1", "mutation.schedule=off",
             "evolution.patch_types=[full]", "evolution.patch_type_probs=[1.0]")
        second, third = llm.requests[1][-1]["content"], llm.requests[2][-1]["content"]
    # A different line each attempt, taken from the parent's settings.
    named = [re.search(r"change the values on this line: `(.*)`", text) for text in (second, third)]
    lines = {m.group(1) for m in named if m}
    assert len(lines) == 2 and lines <= {"SCALE = 0.5", "STEPS = 12", "VALUE = 1"}
