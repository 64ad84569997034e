"""Resuming a real run with a changed ``llm.models`` list: the bandit statistics of the arms that
are still configured are restored, a removed model's arm is dropped, a new model starts fresh."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql, stored_events

from cambrian.api import resume, start
from cambrian.store.store import Store


def models(*servers: tuple[str, ScriptedLLM]) -> str:
    return "llm.models=" + json.dumps([llm.model_config(name=name) for name, llm in servers])


def test_resume_with_a_changed_model_list_keeps_the_surviving_arms(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    with ScriptedLLM(incrementing) as alpha, ScriptedLLM(incrementing) as beta, \
            ScriptedLLM(incrementing) as gamma:
        evolution = start(task, run_dir=run_dir, overrides=[
            models(("alpha", alpha), ("beta", beta)), "llm.selection=ucb1",
            "evolution.generations=6", "novelty.enabled=false", "meta.enabled=false"])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
        store = Store.open(run_dir)
        saved = store.state.get("ensemble")
        beta_calls = sql(store, "SELECT COUNT(*) FROM contexts WHERE model='beta'").fetchone()[0]
        store.close()
        assert set(saved) == {"alpha@0.7", "beta@0.7"}
        assert saved["alpha@0.7"]["improvements"] and saved["beta@0.7"]["improvements"]

        resumed = resume(run_dir, overrides=[models(("alpha", alpha), ("gamma", gamma)),
                                             "evolution.generations=12"])
        resumed.restore()
        stats = resumed.slots.ensemble.bandit.stats  # type: ignore[union-attr]
        assert set(stats) == {"alpha@0.7", "gamma@0.7"}
        assert stats["alpha@0.7"].improvements == saved["alpha@0.7"]["improvements"]
        assert stats["alpha@0.7"].completed == len(saved["alpha@0.7"]["improvements"])
        assert stats["gamma@0.7"].completed == 0
        try:
            summary = asyncio.run(resumed.run())
        finally:
            resumed.store.close()
    assert summary.evaluations == 12
    store = Store.open(run_dir)
    final = store.state.get("ensemble")
    assert set(final) == {"alpha@0.7", "gamma@0.7"}
    before = saved["alpha@0.7"]["improvements"]
    assert final["alpha@0.7"]["improvements"][: len(before)] == before  # continued, not reset
    assert final["gamma@0.7"]["improvements"]  # the new model was pulled and credited
    # The removed model got no call after the resume.
    assert sql(store, "SELECT COUNT(*) FROM contexts WHERE model='beta'").fetchone()[0] == beta_calls
    snapshots = stored_events(store, "bandit")
    assert set(snapshots[-1]["payload"]["shares"]) == {"alpha@0.7", "gamma@0.7"}
    store.close()
