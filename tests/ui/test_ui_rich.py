"""The UI's pages on runs that use every feature they show (``rich_runs.py``): the bandit chart
of a two-model run, novelty rejections, tune steps, meta-scratchpad notes, a run's cost, the
per-case verdicts of a judged candidate, an evaluation's stdout and stderr, the comparison
plotted against cost, and an imported OpenEvolve run beside a ShinkaEvolve one. These tests
also make the screenshots of docs/ui/ (CAMBRIAN_UI_SCREENSHOTS=docs/ui)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import screenshot
from foreign import make_openevolve_output, make_shinka_results
from rich_runs import CRASH_NOTE

from cambrian.core.events import TuneStepped
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.store.store import Store


@pytest.fixture()
def gallery(stored_runs: Path, rich_runs: Path, tmp_path: Path) -> Path:
    """Every kind of run side by side: the counter run, the rich runs, a ShinkaEvolve and an
    OpenEvolve trace."""
    runs = tmp_path / "runs"
    shutil.copytree(stored_runs, runs)
    for run in rich_runs.iterdir():
        shutil.copytree(run, runs / run.name)
    make_shinka_results(runs / "shinka_results")
    make_openevolve_output(runs / "openevolve_output")
    return runs


def read(run_dir: Path, query: Any) -> Any:
    store = Store.open(run_dir, read_only=True)
    try:
        return query(store)
    finally:
        store.close()


def harvest_facts(store: Store) -> dict[str, Any]:
    crashed = next(c for c in store.candidates.list(CandidateStatus.INCORRECT)
                   if "RE" in (store.evaluations.latest(c.id).extra.get("verdicts") or {}))
    return {
        "cost": store.contexts.spend().cost_usd,
        "ledger": {entry.model: entry.cost_usd for entry in store.contexts.ledger()},
        "rejected": [r.id for r in store.views.refused(novelty_only=True)],
        "tune": store.events.of_type(TuneStepped),
        "notes": store.meta_notes.list(),
        "crashed": crashed,
        "cases": store.evaluations.latest(crashed.id).extra["cases"],
        "tree": store.candidates.count("correct", "incorrect", "screened", "pending"),
        "all": store.candidates.count(),
    }


def test_runs_page_and_overview_of_a_rich_run(page: Any, serve: Any, gallery: Path):
    facts = read(gallery / "harvest-run", harvest_facts)
    assert facts["cost"] > 0 and len(facts["ledger"]) == 2 and facts["rejected"]
    assert facts["tune"] and facts["notes"]
    base = serve([gallery])

    page.goto(base + "/")
    row = page.locator("#runs tr[data-key='harvest-run']")
    assert row.locator(".status").inner_text() == "finished"
    assert "alpha, beta" in row.inner_text() and f"{facts['cost']:.4f}" in row.inner_text()
    for key, framework in (("shinka_results", "shinkaevolve"), ("openevolve_output", "openevolve")):
        imported = page.locator(f"#runs tr[data-key='{key}']")
        assert imported.locator(".status").inner_text() == "imported"
        assert framework in imported.inner_text()
    screenshot(page, "runs")

    row.locator("a.run-link").click()
    page.wait_for_url("**/runs/harvest-run")
    assert page.locator("#cost").inner_text() == f"${facts['cost']:.4f}"
    models = page.locator("#models").inner_text()
    assert "alpha" in models and f"{facts['ledger']['beta']:.4f}" in models
    # The bandit's arms, one line each.
    page.locator("#bandit-box:not([hidden]) #chart-bandit canvas").first.wait_for()
    legend = page.locator("#chart-bandit .u-legend").inner_text()
    assert "alpha@0.7" in legend and "beta@0.7" in legend
    # Novelty rejections, with the candidates they refused.
    assert page.locator("#novelty-count").inner_text() == f"({len(facts['rejected'])})"
    novelty = page.locator("#novelty").inner_text()
    assert "too similar to program" in novelty
    for rejected in facts["rejected"]:
        assert page.locator(f"#novelty a[href$='/candidates/{rejected}']").count() == 1
    # Tune steps: one row each, linking the parent and the tuned child.
    rows = page.locator("#tune tbody tr")
    assert rows.count() == len(facts["tune"])
    for row_of_step, step in zip(rows.all(), facts["tune"]):
        assert row_of_step.locator("a").first.inner_text() == str(step.parent_id)
        assert str(step.trials) in row_of_step.inner_text()
        if step.child_id:
            assert row_of_step.locator("a").last.inner_text() == str(step.child_id)
    # The meta-scratchpad's latest notes, open.
    latest = facts["notes"][-1]
    scratchpad = page.locator("#scratchpad details[open]")
    assert f"after {latest.evaluated} evaluations" in scratchpad.inner_text()
    for recommendation in latest.recommendations:
        assert recommendation in scratchpad.inner_text()
    page.locator("#chart-evals canvas").first.wait_for()
    screenshot(page, "overview")

    page.get_by_role("link", name="Tree", exact=True).click()
    page.wait_for_url("**/tree")
    page.locator("#tree g.node").first.wait_for()
    assert page.locator("#tree g.node").count() == facts["tree"]
    page.locator("#show-refused").check()  # the rejected and refused proposals too
    page.wait_for_function(f"document.querySelectorAll('#tree g.node').length === {facts['all']}")
    screenshot(page, "tree")


def test_a_judged_candidate_shows_its_verdicts_per_case(page: Any, serve: Any, gallery: Path):
    facts = read(gallery / "harvest-run", harvest_facts)
    crashed, cases = facts["crashed"], facts["cases"]
    base = serve([gallery])

    page.goto(f"{base}/runs/harvest-run/candidates/{crashed.id}")
    stage = page.locator("#evaluation .stage").last
    shown = stage.locator("table.cases tbody tr")
    assert shown.count() == len(cases)
    for line, case in zip(shown.all(), cases):
        assert line.locator("td").first.inner_text() == case["case"]
        assert line.locator(".verdict").inner_text() == case["verdict"]
    verdicts = {c["verdict"] for c in cases}
    assert {"AC", "RE"} <= verdicts
    # A runtime error keeps the end of the program's stderr.
    assert CRASH_NOTE in stage.locator("table.cases").inner_text()
    assert "runtime error" in page.locator("#error").inner_text()
    assert "fprintf(stderr" in page.locator("#diff pre.diff").inner_text()
    screenshot(page, "candidate")


def test_an_evaluation_shows_what_the_evaluator_printed(page: Any, serve: Any, gallery: Path):
    best = read(gallery / "priced-counter-run",
                lambda store: store.candidates.best(Objective("maximize")))
    base = serve([gallery])

    page.goto(f"{base}/runs/priced-counter-run/candidates/{best.id}")
    stage = page.locator("#evaluation .stage").last
    stage.locator("summary", has_text="stdout").click()
    value = best.source.split("VALUE = ")[1].split()[0]
    assert f"evaluating VALUE = {value}" in stage.locator("details").first.inner_text()
    stage.locator("summary", has_text="stderr").click()
    assert "checked against the limit 12" in stage.locator("details").last.inner_text()


def test_compare_runs_against_cost(page: Any, serve: Any, gallery: Path):
    costs = {name: read(gallery / name, lambda store: store.contexts.spend().cost_usd)
             for name in ("priced-counter-run", "counter-run")}  # two runs of one task
    assert costs["priced-counter-run"] > costs["counter-run"] > 0
    base = serve([gallery])

    page.goto(base + "/compare?" + "&".join(f"run={name}" for name in costs))
    page.locator("#chart-compare canvas").first.wait_for()
    table = page.locator("#compare-table").inner_text()
    assert all(f"{cost:.4f}" in table for cost in costs.values())
    page.locator("#x-axis").select_option("cost_usd")
    page.locator("#chart-compare canvas").first.wait_for()
    x_label = page.locator("#chart-compare .u-legend .u-series").first
    assert "cost (USD)" in x_label.inner_text()
    # The cursor at the right end of the plot is at the run's whole spend, in USD.
    plot = page.locator("#chart-compare .u-over")
    box = plot.bounding_box()
    plot.hover(position={"x": box["width"] - 1, "y": box["height"] / 2})
    shown = x_label.locator(".u-value").inner_text()
    assert float(shown.replace(",", "")) == pytest.approx(costs["priced-counter-run"], rel=1e-3)
    screenshot(page, "compare")


def test_an_imported_openevolve_run(page: Any, serve: Any, gallery: Path):
    output = gallery / "openevolve_output"
    before = sorted(str(p.relative_to(output)) for p in output.rglob("*"))
    base = serve([gallery])

    page.goto(base + "/")
    row = page.locator("#runs tr[data-key='openevolve_output']")
    assert row.locator(".best").inner_text() == "1.5"
    assert row.locator(".badge").inner_text() == "openevolve"

    row.locator("a.run-link").click()
    page.wait_for_url("**/runs/openevolve_output")
    assert page.locator("#best-score").inner_text() == "1.5"
    assert page.locator("#steer").count() == 0
    assert page.locator("#initial-score").inner_text() == "1"
    page.locator("#summary a", has_text="candidate").click()
    page.wait_for_url("**/candidates/*")
    assert "return 1.5" in page.locator("#code").inner_text()
    assert "Improve run() to return more." in page.locator("#prompt").inner_text()
    assert "-    return 1.0" in page.locator("#diff pre.diff").inner_text()
    assert sorted(str(p.relative_to(output)) for p in output.rglob("*")) == before
