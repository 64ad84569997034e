"""Evaluations run in parallel with each other and with proposals (one asyncio loop): measured on
a real run, from the times the evaluator subprocesses report and the LLM calls' stored times."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql

from cambrian.api import start
from cambrian.store.store import Store

# Reports when it started and finished, as seen by the evaluation process itself.
TIMED_EVALUATOR = """import runpy
import time


def evaluate(program_path):
    started = time.time()
    value = runpy.run_path(program_path)["run"]()
    time.sleep(1.0)
    return {"combined_score": float(value),
            "public": {"started": started, "finished": time.time()}}
"""

Interval = tuple[float, float]


def overlap(a: Interval, b: Interval) -> float:
    return min(a[1], b[1]) - max(a[0], b[0])


def most_at_once(intervals: list[Interval]) -> int:
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    running = peak = 0
    for _, step in edges:  # an end sorts before a start at the same instant
        running += step
        peak = max(peak, running)
    return peak


def test_evaluations_overlap_each_other_and_the_llm_calls(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    (task / "evaluate.py").write_text(TIMED_EVALUATOR)
    with ScriptedLLM(incrementing, delay_s=0.3) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=6",
            "evolution.max_parallel_evaluations=2", "evolution.max_proposals_in_flight=1",
            "novelty.enabled=false", "meta.enabled=false"])
        try:
            summary = asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    assert summary.evaluations == 6
    store = Store.open(tmp_path / "run")
    evaluations = []
    for row in store.candidates.list("correct"):
        public = store.evaluations.latest(row.id).public  # type: ignore[union-attr]
        evaluations.append((public["started"], public["finished"]))
    calls = [(end - latency, end) for end, latency in sql(store, 
        "SELECT created_at, latency_s FROM contexts WHERE purpose='mutation'")]
    store.close()
    assert len(evaluations) == 7 and len(calls) >= 6

    children = evaluations[1:]  # the initial program is evaluated before any proposal
    pairs = [overlap(a, b) for i, a in enumerate(children) for b in children[i + 1:]]
    assert max(pairs) > 0.5, "two evaluations must run at the same time"
    assert most_at_once(children) == 2  # ...but never more than max_parallel_evaluations
    assert max(overlap(call, ev) for call in calls for ev in children) > 0.2, \
        "an LLM call must be answered while an evaluation runs"
    while_evaluating = [c for c in calls if any(overlap(c, ev) > 0.2 for ev in children)]
    assert len(while_evaluating) >= 3
