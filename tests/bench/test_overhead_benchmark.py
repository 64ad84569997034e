"""benchmarks/overhead.py: the rows it writes behind the engine's back are consistent (each
evaluation, edge and score on the candidate it belongs to), and its novelty figure measures a
real index restored from a real store."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

from support.store_queries import sql, stored_events

from cambrian.api import resume, start
from cambrian.store.store import Store

REPO = Path(__file__).resolve().parents[2]


def load_overhead():
    spec = importlib.util.spec_from_file_location("overhead", REPO / "benchmarks" / "overhead.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_prefill_puts_every_row_on_its_own_candidate(tmp_path: Path):
    overhead = load_overhead()
    task = overhead.write_task(tmp_path / "task")
    evolution = start(task, run_dir=tmp_path / "run", overrides=overhead.overrides(1),
                      providers={"instant": overhead.InstantLLM()})
    evolution.evaluator = overhead.InstantEvaluator()
    asyncio.run(evolution.run())  # the initial program and one child: ids 1 and 2
    overhead.prefill(evolution.store, 60, evolution.config.database.num_islands)
    evolution.store.close()

    store = Store.open(tmp_path / "run")
    assert store.candidates.count("correct", "incorrect") == 60
    per_candidate = dict(sql(store, 
        "SELECT candidate_id, COUNT(*) FROM evaluations GROUP BY candidate_id").fetchall())
    evaluated = {r.id: r for r in store.candidates.list("correct", "incorrect")}
    assert set(per_candidate) == set(evaluated) and set(per_candidate.values()) == {1}
    for candidate_id, row in evaluated.items():
        assert store.evaluations.latest(candidate_id).combined_score == row.score  # type: ignore[union-attr]
    edges = sql(store, "SELECT parent_id, child_id FROM edges").fetchall()
    assert {child for _, child in edges} == set(evaluated) - {1}
    assert all(parent == evaluated[child].parent_id for parent, child in edges)
    store.close()

    resumed = resume(tmp_path / "run", providers={"instant": overhead.InstantLLM()})
    resumed.restore()  # replays the prefilled history without a snapshot mismatch
    assert len(resumed.selector.programs) == 60
    assert stored_events(resumed.store, "archive_snapshot_mismatch") == []
    resumed.store.close()


def test_novelty_figure_uses_a_restored_index(tmp_path: Path):
    figures = load_overhead().novelty_cost(3000, tmp_path, lookups=20)
    assert figures["embeddings"] == 3000
    assert 0 < figures["lookup_ms"] < 1000 and figures["build_s"] > 0 and figures["restore_s"] > 0
