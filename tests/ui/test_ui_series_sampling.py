"""The overview's score series of a long run is sampled on the server: every improvement of the
best so far is kept with each span's highest and lowest score, and the page says how many of
how many evaluations it shows."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from cambrian.core.evaluation import EvaluationResult
from cambrian.core.objective import Objective
from cambrian.store.rows import NewCandidate
from cambrian.store.store import Store
from cambrian.ui import plots, series
from cambrian.ui.cache import BestMemo, read_ledger
from cambrian.ui.series import sample, score_series


def improvements(scores: list[float | None], correct: list[bool]) -> list[bool]:
    best, found = None, []
    for score, ok in zip(scores, correct):
        better = ok and score is not None and (best is None or score > best)
        best = score if better else best
        found.append(better)
    return found


@pytest.fixture()
def longer_runs(stored_runs: Path, tmp_path: Path) -> Path:
    """The stored counter run with 60 more evaluated children, most of them no better than the
    best (a series with points between its improvements)."""
    shutil.copytree(stored_runs / "counter-run", tmp_path / "runs" / "counter-run")
    store = Store.open(tmp_path / "runs" / "counter-run")
    rng = random.Random(7)
    try:
        with store.transaction():
            generation = store.candidates.max_generation()
            for n in range(60):
                correct = rng.random() < 0.8
                score = rng.random() * 8 + (n // 20) if correct else None
                child = store.candidates.add(NewCandidate(
                    generation=generation + n + 1, island=0, parent_id=1, operator="diff",
                    status="pending", language="python", model="scripted",
                    source=f"VALUE = {n}\n"))
                store.evaluations.add(child, EvaluationResult(
                    status="ok" if correct else "incorrect", combined_score=score,
                    error="" if correct else "VALUE too large"))
                store.candidates.update(child, status="correct" if correct else "incorrect",
                                        score=score)
    finally:
        store.close()
    return tmp_path / "runs"


def test_a_sample_keeps_every_improvement_the_ends_and_each_spans_extremes():
    rng = random.Random(3)
    count, limit = 20_000, 300
    correct = [rng.random() < 0.8 for _ in range(count)]
    scores: list[float | None] = [rng.random() * (1 + i / count) if ok else None
                                  for i, ok in enumerate(correct)]
    improved = improvements(scores, correct)
    keep = sample(scores, correct, improved, limit)
    assert keep == sorted(set(keep)) and {0, count - 1} <= set(keep)
    assert {i for i in range(count) if improved[i]} <= set(keep)
    assert len(keep) <= limit + sum(improved) + 2 < count
    size = -(-count // (limit // 3))
    for start in range(0, count, size):
        span = [i for i in range(start, min(count, start + size)) if correct[i]]
        assert max(span, key=lambda i: scores[i]) in keep  # type: ignore[arg-type,return-value]
        assert min(span, key=lambda i: scores[i]) in keep  # type: ignore[arg-type,return-value]
    assert sample(scores[:limit], correct[:limit], improved[:limit], limit) == list(range(limit))


def test_the_series_of_a_stored_run_says_it_is_sampled(longer_runs: Path):
    store = Store.open(longer_runs / "counter-run", read_only=True)
    try:
        whole = score_series(store)
        assert not whole["sampled"] and whole["n"] == list(range(1, whole["total"] + 1))
        short = score_series(store, spend=read_ledger(store), best=BestMemo(), limit=12)
        best_changes = {whole["id"][i] for i in range(whole["total"])
                        if whole["best"][i] is not None
                        and (i == 0 or whole["best"][i] != whole["best"][i - 1])}
        assert short["sampled"] and short["total"] == whole["total"] > len(short["id"])
        assert best_changes <= set(short["id"])  # every improvement of the best
        for i, n in enumerate(short["n"]):  # each kept point is what the whole series says
            for column in series.SCORE_COLUMNS:
                assert short[column][i] == whole[column][n - 1], column
        assert Objective.of(whole["direction"]).maximize
        assert short["best"][-1] == max(s for s, st in zip(whole["score"], whole["status"])
                                        if st == "correct")
    finally:
        store.close()


def test_the_overview_says_showing_n_of_m(page: Any, serve: Any, longer_runs: Path,
                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(series, "MAX_SCORE_POINTS", 12)
    base = serve([longer_runs])
    page.goto(base + "/runs/counter-run")
    note = page.locator("#series-note")
    note.wait_for()
    shown, total = int(note.get_attribute("data-shown")), int(note.get_attribute("data-total"))
    assert shown < total and note.inner_text().startswith(f"showing {shown} of {total} ")
    page.wait_for_function(
        f"document.getElementById('chart-evals').dataset.points === '{shown}'")


def test_the_size_plot_draws_the_means_of_the_kept_programs_only(longer_runs: Path,
                                                                 monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(plots, "MAX_POINTS", 5)
    store = Store.open(longer_runs / "counter-run", read_only=True)
    try:
        sizes = plots.size_series(store)
    finally:
        store.close()
    assert len(sizes["id"]) == 5 and sizes["mean_generation"] == sorted(set(sizes["generation"]))
    assert len(sizes["mean_lines"]) == len(sizes["mean_generation"])
