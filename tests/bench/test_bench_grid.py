"""A small benchmark grid end to end: two algorithms × 2 seeds × budget 4 on the counter task,
driven by the scripted LLM."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from bench_helpers import ALGORITHMS, grid
from PIL import Image
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.bench.runner import BenchResults, run_bench
from cambrian.bench.spec import BenchSpec
from cambrian.store.store import Store

BUDGET = 4
SEEDS = 2


@dataclass
class Bench:
    llm: ScriptedLLM
    spec: BenchSpec
    results: BenchResults
    out: Path


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    root = tmp_path_factory.mktemp("bench")
    task = write_counter_task(root / "counter")
    with ScriptedLLM(incrementing) as llm:
        spec = grid(llm, task, root / "out", budget=BUDGET, seeds=SEEDS)
        yield Bench(llm, spec, run_bench(spec), root / "out")


def test_every_cell_is_a_normal_run_with_the_same_budget(bench: Bench):
    assert len(bench.results.records) == len(ALGORITHMS) * SEEDS
    for record in bench.results.records:
        run_dir = bench.out / "runs" / record.variant / "counter" / f"seed{record.seed}"
        assert Path(record.run_dir) == run_dir
        store = Store.open(run_dir)
        try:
            info = store.runs.info()
            assert info.config["search"]["algorithm"] == record.variant
            assert info.config["evolution"]["generations"] == BUDGET
            assert info.seed == record.seed
        finally:
            store.close()
        assert record.outcome == "ran"
        assert record.evaluations == BUDGET
        assert record.llm_calls >= BUDGET and record.proposals >= BUDGET
        assert 0 < record.correct <= record.proposals
        assert record.stop_reason == "generation budget reached"


def test_result_files_and_table_rows(bench: Bench):
    data = json.loads((bench.out / "results.json").read_text())
    assert data["spec"]["budget"] == BUDGET and data["spec"]["seeds"] == [0, 1]
    assert [(s["variant"], s["task"]) for s in data["summaries"]] == [
        (a, "counter") for a in ALGORITHMS]
    assert len(data["runs"]) == len(ALGORITHMS) * SEEDS

    table = [line for line in (bench.out / "results.md").read_text().splitlines()
             if line.startswith("| ") and "---" not in line]
    header, rows = table[0], table[1:]
    assert "final best (mean ± std)" in header and "best @25%" in header
    assert [row.split(" | ")[0].lstrip("| ") for row in rows] == ALGORITHMS
    for row, summary in zip(rows, bench.results.summaries):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == "counter" and cells[2] == str(SEEDS)
        assert cells[3].startswith(f"{summary.final_best.mean:.6g}")


def test_curves_are_monotone_and_aggregate_correctly(bench: Bench):
    for record in bench.results.records:
        assert len(record.curve) == BUDGET + 1
        assert record.curve[0] == 1.0  # the initial program's VALUE
        assert all(b is not None and a is not None and b >= a
                   for a, b in zip(record.curve, record.curve[1:]))
    for summary in bench.results.summaries:
        mine = [r for r in bench.results.records if r.variant == summary.variant]
        finals = [r.final_best for r in mine]
        assert summary.final_best.mean == pytest.approx(sum(finals) / len(finals))
        assert summary.final_best.low == min(finals) and summary.final_best.high == max(finals)
        means = [point.mean for point in summary.curve]
        assert all(b >= a for a, b in zip(means, means[1:]))
        assert [c.evaluations for c in summary.checkpoints] == [1, 2, 4]
        assert summary.checkpoints[-1].best == summary.final_best
        correct = sum(r.correct for r in mine)
        assert summary.proposal_success_rate == pytest.approx(
            correct / sum(r.proposals for r in mine))
        assert summary.llm_calls_mean == pytest.approx(sum(r.llm_calls for r in mine) / SEEDS)


def test_plot_is_a_real_image(bench: Bench):
    path = bench.out / "best_vs_evals.png"
    assert path.stat().st_size > 10_000
    with Image.open(path) as image:
        assert image.format == "PNG"
        width, height = image.size
        assert width > 300 and height > 200
        # Not a blank canvas: the curves and bands put many colours on it.
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 16) or []) > 20


def test_reinvoking_skips_finished_runs(bench: Bench):
    calls_before = len(bench.llm.requests)
    again = run_bench(bench.spec)
    assert len(bench.llm.requests) == calls_before
    assert {r.outcome for r in again.records} == {"skipped"}
    assert [r.curve for r in again.records] == [r.curve for r in bench.results.records]
