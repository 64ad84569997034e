"""Shared helpers for the search-algorithm tests: hand-built archives and engine runs."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from support.scripted_llm import ScriptedLLM
from support.store_queries import stored_events

from cambrian.api import resume, start
from cambrian.config import DatabaseConfig, RunConfig, SearchConfig
from cambrian.search.algorithm import ProgramRecord, Selector, commit_rng
from cambrian.search.engine import RunSummary
from cambrian.search.registry import make_selector
from cambrian.store.store import Store


def build_selector(algorithm: str, options: dict[str, Any] | None = None,
                   num_islands: int = 1) -> Selector:
    config = RunConfig(search=SearchConfig(algorithm=algorithm, options=options or {}),
                       database=DatabaseConfig(num_islands=num_islands))
    return make_selector(config, initial_id=1)


def record(pid: int, fitness: float | None, *, parent: int | None = None, island: int = 0,
           cases: dict[str, float] | None = None, metrics: dict[str, Any] | None = None,
           code_length: int = 100) -> ProgramRecord:
    return ProgramRecord(
        id=pid, parent_id=parent, island=island, generation=pid, correct=fitness is not None,
        fitness=fitness, metrics=metrics or {}, case_scores=cases or {}, code_length=code_length,
    )


def feed(selector: Selector, *programs: ProgramRecord) -> list[Any]:
    events = []
    for program in programs:
        events += selector.add(program, commit_rng(0, program.id))
    return events


@dataclass
class FinishedRun:
    summary: RunSummary
    store: Store
    live: dict[str, Any]  # selector state, hook state and description at the end of the run
    resumed: dict[str, Any]  # the same, rebuilt by a resume
    requests: list[list[dict[str, str]]]
    continued: RunSummary | None  # the resumed run carried on to ``continue_to`` generations


def _snapshot(evolution: Any) -> dict[str, Any]:
    return {
        "selector": json.loads(json.dumps(evolution.selector.state())),
        "hooks": (json.loads(json.dumps(hooks.state()))
                  if (hooks := evolution.hook("algorithm hooks")) is not None else None),
        "describe": json.loads(json.dumps(evolution.selector.describe())),
    }


def run_algorithm(task: Path, run_dir: Path, llm: ScriptedLLM, algorithm: str, generations: int,
                  *extra: str, continue_to: int | None = None) -> FinishedRun:
    """Run ``algorithm`` on ``task`` through the real engine, then rebuild it by a resume (and,
    with ``continue_to``, let the resumed run go on to that many generations)."""
    sets = [
        "llm.models=[" + json.dumps(llm.model_config()) + "]",
        f"evolution.generations={generations}", "novelty.enabled=false", "meta.enabled=false",
        f"search.algorithm={algorithm}", "evolution.max_parallel_evaluations=1", *extra,
    ]
    evolution = start(task, overrides=sets, run_dir=run_dir)
    try:
        summary = asyncio.run(evolution.run())
        live = _snapshot(evolution)
    finally:
        evolution.store.close()
    more = [f"evolution.generations={continue_to}"] if continue_to is not None else None
    resumed = resume(run_dir, overrides=more)
    continued = None
    try:
        resumed.restore()
        # The archive snapshot stored at the last commit is what the replay rebuilt.
        assert stored_events(resumed.store, "archive_snapshot_mismatch") == []
        rebuilt = _snapshot(resumed)
        if continue_to is not None:
            continued = asyncio.run(resumed.run())
    finally:
        resumed.store.close()
    return FinishedRun(summary, Store.open(run_dir), live, rebuilt, list(llm.requests), continued)


def scripted_gateway(ask):
    """A stand-in for the LLM gateway whose ``ask`` answers with ``ask(purpose, prompt)``."""
    async def gateway_ask(purpose, prompt, **options):
        return SimpleNamespace(text=await ask(purpose, prompt, **options))

    return SimpleNamespace(ask=gateway_ask)
