from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import numpy as np
import pytest
from algorithm_helpers import build_selector, feed, record, run_algorithm, scripted_gateway
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql, stored_events

from cambrian.core.hooks import StepFailed
from cambrian.core.objective import MAXIMIZE
from cambrian.search.algorithms import strategy_sandbox
from cambrian.search.algorithms.evox import DEFAULT_STRATEGY, EvoxHooks, extract_code
from cambrian.search.algorithms.strategy_sandbox import StrategyError
from cambrian.search.hooks import HookServices

BEST_FIRST = '''def select(programs, rng):
    return max(programs, key=lambda p: (p["fitness"], -p["id"]))["id"]
'''
WORST_FIRST = '''import math


def select(programs, rng):
    return min(programs, key=lambda p: (p["fitness"], p["id"]))["id"]
'''
# Fine on small archives, broken once the archive grows past three programs.
BREAKS_ON_GROWTH = '''def select(programs, rng):
    if len(programs) > 3:
        return -1
    return programs[0]["id"]
'''

BAD_STRATEGIES = {
    "syntax error": ("def select(programs, rng)\n    return 1\n", "does not load: SyntaxError"),
    "no select": ("def choose(programs, rng):\n    return programs[0]['id']\n", "defines no function"),
    "bad id": ("def select(programs, rng):\n    return 123456\n", "not among the programs"),
    "not an int": ("def select(programs, rng):\n    return str(programs[0]['id'])\n", "not a program id"),
    "raises": ("def select(programs, rng):\n    return programs[99]['id']\n", "raised IndexError"),
    "python loop": ("def select(programs, rng):\n    while True:\n        pass\n", "took longer"),
    "C-level loop": ("import itertools\n\n\ndef select(programs, rng):\n"
                     "    return sum(itertools.count())\n", "did not finish within"),
    "file access": ("def select(programs, rng):\n    open('/etc/hostname')\n    return programs[0]['id']\n",
                    "NameError"),
    "forbidden import": ("import os\n\n\ndef select(programs, rng):\n    return programs[0]['id']\n",
                         "may import only"),
}


def evox_selector(options=None):
    sel = build_selector("evox", options)
    feed(sel, record(1, 1.0), record(2, 3.0, parent=1), record(3, None, parent=1),
         record(1000, 2.0, parent=2))
    return sel


def hooks_for(sel, reply):
    async def ask(purpose, prompt, **kwargs):
        hooks.prompts.append(prompt)
        return reply(len(hooks.prompts) - 1) if callable(reply) else reply

    services = HookServices(store=None, objective=MAXIMIZE, problem="",
                            gateway=scripted_gateway(ask), model_label="scripted",
                            record_child=lambda generation, child: None)
    hooks = EvoxHooks(sel, services, sel.context.options)
    hooks.prompts = []
    return hooks


def test_default_strategy_samples_valid_correct_parents():
    sel = evox_selector()
    rng = np.random.default_rng(0)
    parents = {sel.sample(rng).parent_id for _ in range(200)}
    assert parents == {1, 2, 1000}
    sample = sel.sample(rng)
    assert sample.parent_id not in sample.inspiration_ids and len(sample.inspiration_ids) == 2


@pytest.mark.parametrize("name", sorted(BAD_STRATEGIES))
def test_validation_rejects_a_broken_strategy(name):
    source, message = BAD_STRATEGIES[name]
    started = time.monotonic()
    error = asyncio.run(strategy_sandbox.validate(
        source, [[{"id": 7, "fitness": 1.0, "generation": 0, "children": 0, "island": 0,
                   "code_length": 10}]], [0, 1], timeout_s=3.0, call_seconds=0.3))
    assert error is not None and message in error
    assert time.monotonic() - started < 6


def test_validation_accepts_a_sound_strategy_and_checks_the_real_archive():
    sel = evox_selector()
    hooks = hooks_for(sel, "")
    assert asyncio.run(hooks.validate(WORST_FIRST)) is None
    # Survives the synthetic archives but not the real one, whose ids go past 500.
    picky = "def select(programs, rng):\n    assert all(p['id'] < 500 for p in programs)\n" \
            "    return programs[0]['id']\n"
    assert strategy_sandbox.check(picky, [[{"id": 3}], [{"id": 400}]], [0], 1.0) is None
    error = asyncio.run(hooks.validate(picky))
    assert error is not None and "test archive 3" in error


def test_a_stall_triggers_a_rewrite_and_a_failed_validation_keeps_the_strategy():
    sel = evox_selector({"stall_window": 2})
    replies = ["Here:\n```python\ndef select(programs, rng):\n    return 0\n```\n",
               f"Better:\n```python\n{BEST_FIRST}```\n"]
    hooks = hooks_for(sel, lambda i: replies[i])
    assert sel.since_improvement == 2 and hooks.due(3)
    with pytest.raises(StepFailed) as failed:  # the loop records it and backs off
        asyncio.run(hooks.step(3))
    events = failed.value.events
    assert [e.kind for e in events] == ["strategy_rejected"]
    assert "not among the programs" in events[0].payload()["error"]
    assert sel.strategy_source == DEFAULT_STRATEGY
    assert "## Current strategy" in hooks.prompts[0] and "def select(programs, rng)" in hooks.prompts[0]
    assert "program 1000" in hooks.prompts[0]  # recent progress is shown
    assert not hooks.due(3)  # wait a full window before trying again
    feed(sel, record(5, 0.5), record(6, 0.5))
    events = asyncio.run(hooks.step(5))
    assert [e.kind for e in events] == ["strategy_swap"]
    assert sel.strategy_source == BEST_FIRST and sel.previous_source == DEFAULT_STRATEGY
    assert {sel.sample(np.random.default_rng(s)).parent_id for s in range(20)} == {2}
    assert [a["accepted"] for a in hooks.state()["attempts"]] == [False, True]


def test_no_rewrite_is_due_before_there_is_a_correct_program():
    sel = build_selector("evox", {"stall_window": 2})
    feed(sel, record(1, None), record(2, None, parent=1), record(3, None, parent=1))
    assert sel.since_improvement == 2 and not hooks_for(sel, "").due(2)


def test_a_strategy_failing_at_run_time_is_rolled_back_to_the_previous_one():
    sel = build_selector("evox")
    sel.load_state({"strategy": BREAKS_ON_GROWTH, "previous": WORST_FIRST})
    feed(sel, record(1, 1.0), record(2, 5.0), record(3, 4.0))
    assert sel.sample(np.random.default_rng(0)).parent_id == 1
    feed(sel, record(4, 2.0))
    sample = sel.sample(np.random.default_rng(0))  # BREAKS_ON_GROWTH returns -1 now
    assert sample.parent_id == 1  # chosen by the restored WORST_FIRST
    assert sel.state() == {"strategy": WORST_FIRST, "previous": None}
    hooks = hooks_for(sel, "")
    assert hooks.due(4)
    events = asyncio.run(hooks.step(4))
    assert [e.kind for e in events] == ["strategy_rollback"]
    assert "not among the programs" in events[0].payload()["error"]
    assert events[0].payload()["failed_source"] == BREAKS_ON_GROWTH
    assert not sel.pending_events


def test_an_endless_strategy_at_run_time_is_interrupted_and_rolled_back():
    sel = build_selector("evox", {"call_timeout_s": 0.2})
    sel.load_state({"strategy": BAD_STRATEGIES["python loop"][0], "previous": None})
    feed(sel, record(1, 1.0), record(2, 5.0))
    started = time.monotonic()
    assert sel.sample(np.random.default_rng(0)).parent_id in {1, 2}
    assert time.monotonic() - started < 2
    assert sel.strategy_source == DEFAULT_STRATEGY
    assert "took longer" in sel.pending_events[0].payload()["error"]


def test_state_reinstalls_the_strategies():
    sel = build_selector("evox")
    sel.load_state({"strategy": WORST_FIRST, "previous": BEST_FIRST})
    feed(sel, record(1, 1.0), record(2, 5.0))
    assert sel.sample(np.random.default_rng(0)).parent_id == 1
    assert sel.state() == {"strategy": WORST_FIRST, "previous": BEST_FIRST}


def test_call_with_deadline_checks_the_returned_id():
    function = strategy_sandbox.load_strategy("def select(programs, rng):\n    return True\n")
    with pytest.raises(StrategyError, match="not a program id"):
        strategy_sandbox.call_with_deadline(function, [{"id": 1}], random.Random(0), 1.0)
    assert extract_code("x\n```\ndef select(p, r):\n    return 1\n```") == \
        "def select(p, r):\n    return 1\n"
    assert extract_code("no code") is None


def rewrite_after_stall():
    """A responder whose first strategy rewrite is broken and second is sound; programs stop
    improving after two calls until a strategy has been installed."""
    rewrites: list[int] = []

    def reply(messages, index):
        prompt = messages[-1]["content"]
        if "Rewrite the parent-selection strategy" in prompt:
            rewrites.append(index)
            if len(rewrites) == 1:
                return "```python\ndef select(programs, rng)\n    return 1\n```\n"
            return f"Pick the best.\n```python\n{BEST_FIRST}```\n"
        if index < 2 or len(rewrites) >= 2:
            return incrementing(messages, index)
        return f"Try something\n```python\nVALUE = {-index}\n```\n"

    return reply


def test_evox_run_rewrites_its_strategy_and_resumes(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(rewrite_after_stall()) as llm:
        run = run_algorithm(task, tmp_path / "run", llm, "evox", 12,
                            "search.options.stall_window=2",
                            "evolution.patch_types=[full]", "evolution.patch_type_probs=[1.0]",
                            continue_to=15)
    assert run.summary.evaluations == 12
    assert [e["kind"] for e in stored_events(run.store, ) if e["kind"].startswith("strategy_")] == \
        ["strategy_rejected", "strategy_swap"]
    assert run.live["selector"] == {"strategy": BEST_FIRST, "previous": DEFAULT_STRATEGY}
    assert sql(run.store, "SELECT COUNT(*) FROM contexts WHERE purpose='strategy'").fetchone()[0] == 2
    assert run.summary.best_score > run.summary.initial_score
    assert run.resumed == run.live
    assert run.continued.evaluations == 15  # the reinstalled strategy keeps choosing parents
    assert run.store.state.get("selector")["strategy"] == BEST_FIRST
