"""The resume snapshot (search/resume_snapshot.py): a run resumed from it holds the archive a
full replay of the store rebuilds (programs, islands, counters, best fitness), continues the
same way, and a damaged or stale snapshot makes the resume replay everything instead."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import resume, start
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.status import CandidateStatus
from cambrian.search.resume_snapshot import FORMAT
from cambrian.store.rows import NewCandidate
from cambrian.store.store import Store

SETTINGS = ["database.num_islands=3", "database.migration_interval=2",
            "database.migration_rate=0.5", "novelty.enabled=false", "meta.enabled=false",
            "evolution.max_parallel_evaluations=1", "evolution.max_proposals_in_flight=1"]


def model(llm: ScriptedLLM) -> str:
    return "llm.models=[" + json.dumps(llm.model_config()) + "]"


def archive_state(evolution: Any) -> dict[str, Any]:
    """What the selector keeps, as comparable values (islands by member records)."""
    selector = evolution.selector
    archive = selector.archive
    return {
        "programs": dict(selector.programs.items()),
        "islands": [sorted((m.id, m.island, m.fitness, m.children) for m in archive.island(i))
                    for i in range(archive.num_islands)],
        "commits": selector.commits, "beam_head": selector.selection.beam_head,
        "best_fitness": evolution.archive.best_fitness, "snapshot": selector.snapshot(),
    }


def restored(run_dir: Path, caplog: pytest.LogCaptureFixture, *overrides: str,
             llm: ScriptedLLM | None = None) -> tuple[Any, str]:
    caplog.clear()
    evolution = resume(run_dir, overrides=[*SETTINGS, *overrides,
                                           *([model(llm)] if llm is not None else [])])
    with caplog.at_level(logging.INFO, logger="cambrian.search.resume_snapshot"):
        evolution.restore()
    return evolution, caplog.text


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A finished nine-generation run on three islands that migrated programs."""
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            model(llm), "evolution.generations=9", *SETTINGS])
        asyncio.run(evolution.run())
        evolution.store.close()
    return tmp_path / "run"


def copy_without_snapshot(run_dir: Path, to: Path) -> Path:
    shutil.copytree(run_dir, to)
    store = Store.open(to)
    store.resume_snapshot.delete()
    store.close()
    return to


def test_a_resume_from_the_snapshot_holds_and_continues_as_a_full_replay(
        run: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture):
    store = Store.open(run)
    header = store.resume_snapshot.header()
    store.close()
    assert header is not None and header["format"] == FORMAT and header["programs"] == 10
    replay_dir = copy_without_snapshot(run, tmp_path / "replayed")

    from_snapshot, log = restored(run, caplog)
    assert "search snapshot of 10 programs loaded, 0 later evaluations replayed" in log
    by_replay, log = restored(replay_dir, caplog)
    assert "no search snapshot in the store; replaying every evaluation" in log
    assert archive_state(from_snapshot) == archive_state(by_replay)
    # Records shared by the program table and an island are one object, as after a replay.
    selector = from_snapshot.selector
    for island in range(selector.archive.num_islands):
        for member in selector.archive.island(island):
            assert selector.programs[member.id] is member
    from_snapshot.store.close()
    by_replay.store.close()

    # Both continue the same way: the same children, parents, islands and archive.
    finished = []
    for run_dir in (run, replay_dir):
        with ScriptedLLM(incrementing) as llm:
            evolution, _ = restored(run_dir, caplog, "evolution.generations=15", llm=llm)
            asyncio.run(evolution.run())
            children = [(c.id, c.parent_id, c.island, c.source, c.status)
                        for c in evolution.store.candidates.list()]
            finished.append((children, archive_state(evolution)))
            evolution.store.close()
    assert finished[0] == finished[1]
    assert len(finished[0][0]) > 10


def test_evaluations_after_the_snapshot_are_replayed_after_it(
        run: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture):
    for run_dir in (run, copy_without_snapshot(run, tmp_path / "replayed")):
        store = Store.open(run_dir)  # two programs written after the snapshot, one on island 2
        for value, island in ((70, 2), (3, 0)):
            child = store.candidates.add(NewCandidate(
                generation=20 + value, island=island, parent_id=2, operator="diff",
                status=CandidateStatus.PENDING, language="python", source=f"VALUE = {value}\n"))
            store.evaluations.add(child, EvaluationResult(status="ok", combined_score=value,
                                                          public={"value": value}))
            store.candidates.update(child, status=CandidateStatus.CORRECT, score=value)
        store.close()
    from_snapshot, log = restored(run, caplog)
    assert "search snapshot of 10 programs loaded, 2 later evaluations replayed" in log
    by_replay, _ = restored(tmp_path / "replayed", caplog)
    assert archive_state(from_snapshot) == archive_state(by_replay)
    assert from_snapshot.selector.programs[2].children == by_replay.selector.programs[2].children
    from_snapshot.store.close()
    by_replay.store.close()


@pytest.mark.parametrize("damage", ["digest", "payload", "format", "settings", "count"])
def test_a_damaged_or_stale_snapshot_makes_the_resume_replay_everything(
        run: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str):
    store = Store.open(run)
    header, payload = store.resume_snapshot.header(), store.resume_snapshot.payload()
    assert header is not None and payload is not None
    if damage == "digest":  # bytes changed after it was written
        store.resume_snapshot.put(header, payload[:-8] + b"\x00" * 8)
    elif damage == "payload":  # bytes that are not a snapshot, with a matching digest
        import hashlib
        garbage = b"not a pickle"
        store.resume_snapshot.put({**header, "sha256": hashlib.sha256(garbage).hexdigest()},
                                  garbage)
    elif damage == "format":
        store.resume_snapshot.put({**header, "format": FORMAT + 1}, payload)
    elif damage == "count":  # its header and its payload disagree
        store.resume_snapshot.put({**header, "programs": 11}, payload)
    store.close()
    overrides = ["database.migration_rate=0.25"] if damage == "settings" else []
    replay_dir = copy_without_snapshot(run, tmp_path / "replayed")
    from_snapshot, log = restored(run, caplog, *overrides)
    assert "the search snapshot is not usable" in log and "replaying every evaluation" in log
    by_replay, _ = restored(replay_dir, caplog, *overrides)
    assert archive_state(from_snapshot) == archive_state(by_replay)
    assert len(from_snapshot.selector.programs) == 10
    # The store lost nothing: the damaged snapshot is replaced when the session ends.
    assert from_snapshot.store.candidates.count() == by_replay.store.candidates.count()
    from_snapshot.store.close()
    by_replay.store.close()
