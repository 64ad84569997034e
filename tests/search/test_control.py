"""Steering a running search: pause and resume proposals, change the budget, stop cleanly, from
this process and from another one (a request row written while the loop runs). Real runs with
the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import start
from cambrian.core.errors import ConfigError
from cambrian.core.events import ControlChanged
from cambrian.core.outcomes import RunOutcome
from cambrian.search.control import request_control
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store


def sets(llm: ScriptedLLM, generations: int) -> list[str]:
    return ["llm.models=[" + json.dumps(llm.model_config()) + "]",
            f"evolution.generations={generations}", "novelty.enabled=false",
            "meta.enabled=false", "evolution.max_parallel_evaluations=1"]


def test_pause_stops_new_proposals_until_resume(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=sets(llm, 4))

        async def scenario() -> tuple[int, int]:
            run = asyncio.create_task(evolution.run())
            while len(llm.requests) < 1:
                await asyncio.sleep(0.01)
            evolution.control.request("pause", source="test")
            await asyncio.sleep(1.5)  # paused: the run neither ends nor asks the LLM
            during = len(llm.requests)
            assert not run.done()
            await asyncio.sleep(1.0)
            assert len(llm.requests) == during
            evolution.control.request("resume", source="test")
            summary = await run
            return during, summary.evaluations

        during, evaluated = asyncio.run(scenario())
        evolution.store.close()
    assert during <= 2 and evaluated == 4  # at most the proposal in flight when it paused
    store = Store.open(tmp_path / "run")
    actions = [(e.action, e.source) for e in store.events.of_type(ControlChanged)]
    assert actions == [("pause", "test"), ("resume", "test")]
    store.close()


def test_a_stop_requested_from_another_process_ends_the_run_cleanly(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"

    def reply(messages, index):
        if index == 2:  # another connection to the store, as the web UI's process has
            other = Store.open(run_dir)
            request_control(Recorder(other), "stop", source="ui")
            other.close()
        return incrementing(messages, index)

    with ScriptedLLM(reply) as llm:
        evolution = start(task, run_dir=run_dir, overrides=sets(llm, 20))
        summary = asyncio.run(evolution.run())
        evolution.store.close()
    assert summary.stop_reason == "stopped on request (ui)"
    assert summary.outcome is RunOutcome.STOPPED and summary.evaluations < 20
    store = Store.open(run_dir)
    assert store.candidates.count("pending") == 0  # what was in flight was finished
    assert store.control.pending() == []
    store.close()


def test_a_budget_change_takes_effect_and_is_kept_for_resume(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=run_dir, overrides=sets(llm, 2))
        evolution.control.request("budget", {"generations": 5}, source="ui")
        summary = asyncio.run(evolution.run())
        evolution.store.close()
    assert summary.evaluations == 5
    store = Store.open(run_dir)
    assert store.runs.info().config["evolution"]["generations"] == 5
    [change] = store.events.of_type(ControlChanged)
    assert change.detail == {"generations": 5, "before": {"generations": 2}}
    store.close()
    assert "generations: 5" in (run_dir / "config.yaml").read_text()


def test_invalid_requests_are_refused_before_they_are_queued(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    with pytest.raises(ConfigError, match="unknown control action 'explode'"):
        request_control(Recorder(store), "explode")
    with pytest.raises(ConfigError, match="budget request changes one of generations"):
        request_control(Recorder(store), "budget", {"generation": 3})
    assert store.control.pending() == []
    store.close()
