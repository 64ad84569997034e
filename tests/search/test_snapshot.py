"""The archive snapshot in search_state: written at every commit, readable without replaying the
run, and checked against the replayed archive on resume (a mismatch is logged and recorded)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import stored_events

from cambrian.api import resume, start
from cambrian.core.events import CandidateEvaluated, Event
from cambrian.store.store import Store


def islands(evolution) -> list[list[int]]:
    archive = evolution.selector.archive
    return [sorted(m.id for m in archive.island(i)) for i in range(archive.num_islands)]


def test_snapshot_tracks_the_archive_and_resume_verifies_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture):
    task = write_counter_task(tmp_path / "task")
    seen: list[tuple[list[list[int]], list[list[int]]]] = []
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=9",
            "database.num_islands=3", "database.migration_interval=2",
            "database.migration_rate=0.5", "novelty.enabled=false", "meta.enabled=false"])

        def after_commit(event: Event) -> None:
            if isinstance(event, CandidateEvaluated):  # the snapshot committed with it
                stored = evolution.store.state.get("archive_snapshot")["islands"]
                seen.append((stored, islands(evolution)))

        evolution.subscribe(after_commit)
        try:
            asyncio.run(evolution.run())
            live = islands(evolution)
        finally:
            evolution.store.close()
    assert len(seen) == 10 and all(stored == current for stored, current in seen)
    assert len({json.dumps(stored) for stored, _ in seen}) > 3  # it changed as the run went
    store = Store.open(tmp_path / "run")
    snapshot = store.state.get("archive_snapshot")
    assert snapshot == {"programs": 10, "islands": live}
    assert stored_events(store, "migration"), "the run must have migrated programs"
    store.close()

    resumed = resume(tmp_path / "run")
    resumed.restore()
    assert islands(resumed) == live
    assert stored_events(resumed.store, "archive_snapshot_mismatch") == []

    # A stored snapshot the replay does not reproduce is reported, not silently overwritten.
    tampered = {"programs": 10, "islands": [live[0][:-1], live[1], live[2]]}
    resumed.store.state.put("archive_snapshot", tampered)
    resumed.archive.verify_snapshot(resumed.store, resumed.ctx.recorder)
    events = stored_events(resumed.store, "archive_snapshot_mismatch")
    assert len(events) == 1
    assert events[0]["payload"] == {"stored": tampered, "replayed": snapshot}
    assert "did not rebuild the stored archive" in caplog.text
    resumed.store.close()
