"""A resume replays the archive from lean rows (no source, output or private metrics read): the
records it builds are the ones the full rows give."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import resume, start
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.status import CandidateStatus
from cambrian.search.algorithm import commit_rng
from cambrian.store.rows import NewCandidate


def test_lean_replay_rows_give_the_same_records_as_the_full_rows(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=6",
            "novelty.enabled=false", "meta.enabled=false"])
        asyncio.run(evolution.run())
        store = evolution.store
        # One more, judged on cases, with a source holding a non-ASCII character.
        child = store.candidates.add(NewCandidate(
            generation=99, island=1, parent_id=2, operator="diff",
            status=CandidateStatus.PENDING, language="python", source="VALUE = 5  # é\n"))
        store.evaluations.add(child, EvaluationResult(
            status="ok", combined_score=5.0, public={"value": 5},
            extra={"cases": [{"case": "a", "score": 1.0}, {"case": "b", "score": 0.5}]}))
        store.candidates.update(child, status=CandidateStatus.CORRECT, score=5.0)
        store.close()
    resumed = resume(tmp_path / "run")
    archive, store = resumed.archive, resumed.store
    full = [archive.record_of(row, result)
            for row, result in store.candidates.evaluated_in_commit_order()]
    lean = [archive.replay_record(row) for row in store.candidates.replay_rows()]
    assert lean == full and len(lean) == 8
    assert lean[-1].case_scores == {"a": 1.0, "b": 0.5} and lean[-1].code_length == 15
    store.close()


def test_the_commit_rng_is_made_on_first_use_and_draws_as_a_generator():
    import numpy as np

    lazy = commit_rng(3, 17)
    eager = np.random.default_rng([3, 17, 0x5E1EC7])
    assert lazy.integers(1000, size=5).tolist() == eager.integers(1000, size=5).tolist()
    assert lazy.choice(10, size=3, replace=False).tolist() == \
        eager.choice(10, size=3, replace=False).tolist()
