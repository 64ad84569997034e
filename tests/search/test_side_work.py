"""Side work backs off after failed steps and holds proposals back for one call at most."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql, stored_events

from cambrian.api import start
from cambrian.core.hooks import StepFailed
from cambrian.llm.gateway import CALL_RETURNED
from cambrian.search.side_work import PeriodicJob, SideWork, backoff


def test_backoff_doubles_and_is_capped():
    assert [backoff(n) for n in range(1, 9)] == [2, 4, 8, 16, 32, 64, 64, 64]


def test_a_failing_job_backs_off_and_a_success_resets_it():
    outcomes = iter([False, False, False, True, False, True])
    starts: list[int] = []

    async def step(evaluated: int) -> None:
        starts.append(evaluated)
        if not next(outcomes):
            raise StepFailed("no recommendations")

    failures: list[tuple[int, int | None]] = []
    job = PeriodicJob("pad", lambda evaluated: True, step, blocks_proposals=True)
    work = SideWork([job], on_failure=lambda j, failure, n: failures.append((n, j.retry_at)))

    async def drive() -> None:
        for evaluated in range(1, 19):
            for task in work.launch_due(evaluated):
                await task

    asyncio.run(drive())
    # Failed at 1 (wait 2), 3 (wait 4), 7 (wait 8); succeeded at 15; failed at 16 (wait 2).
    assert starts == [1, 3, 7, 15, 16, 18]
    assert failures[:3] == [(1, 3), (3, 7), (7, 15)] and failures[3] == (16, 18)


def test_a_slow_failing_step_backs_off_from_when_it_failed():
    """A step started at evaluation 1 that fails when the run is at 9 waits until 11, not 3."""
    now = {"evaluated": 1}

    async def step(evaluated: int) -> None:
        now["evaluated"] = 9  # evaluations went on while its LLM call was slow
        raise StepFailed("no recommendations")

    job = PeriodicJob("pad", lambda evaluated: True, step, blocks_proposals=False)
    work = SideWork([job], evaluated_now=lambda: now["evaluated"])

    async def drive() -> None:
        for task in work.launch_due(1):
            await task

    asyncio.run(drive())
    assert job.retry_at == 9 + backoff(1)
    assert work.launch_due(10) == []


def test_a_blocking_job_holds_proposals_only_until_its_call_returns():
    seen: list[str] = []

    async def step(evaluated: int) -> None:
        await asyncio.sleep(0.05)  # its LLM call
        returned = CALL_RETURNED.get()
        assert returned is not None
        returned()
        seen.append("call returned")
        await asyncio.sleep(10)  # e.g. validating a rewritten strategy: beside the proposals

    job = PeriodicJob("strategy", lambda evaluated: True, step, blocks_proposals=True)
    work = SideWork([job])

    async def drive() -> None:
        started = work.launch_due(1)
        assert work.blocking()
        released = next(f for f in started if not isinstance(f, asyncio.Task))
        await asyncio.wait_for(released, 2)  # the loop wakes up here
        assert seen == ["call returned"]
        assert job.running and not work.blocking()
        for future in started:
            future.cancel()
        await asyncio.gather(*started, return_exceptions=True)

    asyncio.run(drive())


def test_a_scratchpad_without_recommendations_is_not_retried_after_every_evaluation(
        tmp_path: Path):
    """Issue 17: 21 extra calls in a 30-evaluation run before the back-off."""
    task = write_counter_task(tmp_path / "task")

    def reply(messages, index):
        if "Update the notes" in messages[-1]["content"]:
            return "I have no recommendations."
        return incrementing(messages, index)

    with ScriptedLLM(reply) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=30",
            "novelty.enabled=false", "meta.interval=10"])
        summary = asyncio.run(evolution.run())
        store = evolution.store
    assert summary.evaluations == 30
    meta_calls = sql(store, "SELECT COUNT(*) FROM contexts WHERE purpose='meta'").fetchone()[0]
    # First due at 10, then retried at about 12, 16 and 24 (each failure doubles the wait).
    assert 2 <= meta_calls <= 5, meta_calls
    failed = [e["payload"] for e in stored_events(store, "side_step_failed")]
    assert len(failed) == meta_calls
    assert all(e["hook"] == "meta-scratchpad" and "no recommendations" in e["reason"]
               for e in failed)
    waits = [e["retry_at"] - e["evaluated"] for e in failed]
    assert waits == [2 << i for i in range(len(waits))]
    store.close()
