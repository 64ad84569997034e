"""The program browser, the best program's code, the diff to the initial program and the error
pages in headless Chromium, against real stored runs: the counter run (a refused reply, a
child over the limit), the rich judged run (two models, novelty rejections) and a run whose
programs report two metrics and whose over-limit children fail with a long reason."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import in_thread, screenshot, scripted_sets
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import start
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.store.browse import failure_reason
from cambrian.store.rows import CandidateRow
from cambrian.store.store import Store

LONG_TAIL = "-".join(["the-limit-is-twelve"] * 16)  # one long word: only wrapping shows it
METRICS_EVALUATOR = f"""import runpy

LIMIT = 12


def evaluate(program_path):
    value = runpy.run_path(program_path)["run"]()
    if value > LIMIT:
        return {{"correct": False, "error": f"VALUE {{value}} exceeds the limit {LONG_TAIL}"}}
    return {{"combined_score": float(value),
             "public": {{"value": value, "balance": -abs(value - 6)}}}}
"""


@pytest.fixture(scope="module")
def metrics_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A counter run whose programs report two metrics (value, closeness to 6) and whose children
    over the limit fail with a reason of about 330 characters."""
    root = tmp_path_factory.mktemp("ui-metrics")
    task = write_counter_task(root / "task")
    (task / "evaluate.py").write_text(METRICS_EVALUATOR)

    def run() -> Path:
        with ScriptedLLM(incrementing) as llm:
            evolution = start(task, run_dir=root / "runs" / "metrics-run",
                              overrides=scripted_sets(llm, 10))
            try:
                asyncio.run(evolution.run())
            finally:
                evolution.store.close()
        return root / "runs"

    return in_thread(run)


def element_shot(locator: Any, name: str) -> None:
    """With CAMBRIAN_UI_SCREENSHOTS=DIR, keep a screenshot of one part of a page."""
    folder = os.environ.get("CAMBRIAN_UI_SCREENSHOTS")
    if folder:
        locator.page.wait_for_timeout(400)  # charts draw after their data arrives
        locator.screenshot(path=str(Path(folder) / f"{name}.png"))


def rows_of(run_dir: Path) -> list[CandidateRow]:
    with Store.open(run_dir, read_only=True) as store:
        return store.candidates.list()


def best_of(run_dir: Path) -> CandidateRow:
    with Store.open(run_dir, read_only=True) as store:
        best = store.candidates.best(Objective("maximize"))
    assert best is not None
    return best


def shown_ids(page: Any) -> list[int]:
    rows = page.locator("#programs tbody tr[data-id]")
    return [int(rows.nth(i).get_attribute("data-id")) for i in range(rows.count())]


def total(page: Any) -> int:
    return int(page.locator("#browser-total").inner_text())


def test_the_browser_sorts_filters_and_searches(page: Any, serve: Any, rich_runs: Path):
    run_dir = rich_runs / "harvest-run"
    rows = rows_of(run_dir)
    by_id = {r.id: r for r in rows}
    base = serve([rich_runs])

    page.goto(f"{base}/runs/harvest-run")
    page.locator("header nav a", has_text="Programs").click()
    page.wait_for_url("**/runs/harvest-run/programs")
    assert total(page) == len(rows)
    assert shown_ids(page) == sorted(by_id)[:100]
    screenshot(page, "browser")

    # Sorted by score, best first, then turned around (no score: last either way).
    page.locator("#programs th a[data-sort='score']").click()
    page.wait_for_url("**sort=score**")
    scored = sorted((r for r in rows if r.score is not None), key=lambda r: (-r.score, -r.id))
    assert shown_ids(page)[:len(scored)] == [r.id for r in scored]
    assert page.locator("#programs th .sort-mark").filter(has_text="▼").count() == 1
    page.locator("#programs th a[data-sort='score']").click()
    page.wait_for_url("**order=asc**")
    ascending = sorted((r for r in rows if r.score is not None), key=lambda r: (r.score, r.id))
    assert shown_ids(page)[:len(ascending)] == [r.id for r in ascending]

    # A model chosen from the list filters at once; the sort stays.
    page.locator("#filter-model").select_option("beta")
    page.wait_for_url("**model=beta**")
    betas = [r for r in rows if r.model == "beta"]
    assert betas and total(page) == len(betas)
    assert set(shown_ids(page)) == {r.id for r in betas}
    assert all(t == "beta" for t in page.locator("#programs td.model").all_inner_texts())
    assert parse_qs(urlparse(page.url).query)["sort"] == ["score"]

    # A status on top of it.
    page.locator("#filter-status").select_option("correct")
    page.wait_for_url("**status=correct**")
    assert set(shown_ids(page)) == {r.id for r in betas if r.status is CandidateStatus.CORRECT}
    page.locator("#browser-clear").click()
    page.wait_for_url(lambda url: url.endswith("/programs?sort=score&order=asc"))
    assert total(page) == len(rows)

    # Text search reads errors and code: the novelty refusals, then a line of the program.
    page.locator("#browser-search").fill("too similar")
    page.locator("#browser-search").press("Enter")
    page.wait_for_url("**q=too+similar**")
    similar = [r for r in rows if "too similar" in r.error]
    assert similar and set(shown_ids(page)) == {r.id for r in similar}
    page.locator("#browser-search").fill("fprintf(stderr")
    page.locator("#browser-search").press("Enter")
    page.wait_for_url("**q=fprintf**")
    printing = {r.id for r in rows if "fprintf(stderr" in (r.source or "")}
    assert printing and set(shown_ids(page)) == printing

    # A failure reason in the table links to every candidate failing so.
    page.locator("#browser-clear").click()
    page.wait_for_url(lambda url: "q=" not in url)
    row = page.locator("#programs tr[data-id]:has(td.reason a)").first
    link = row.locator("td.reason a")
    reason = failure_reason(row.get_attribute("data-status"), link.inner_text())
    link.click()
    page.wait_for_url("**reason=**")
    same = {r.id for r in rows if r.status in (
        CandidateStatus.INCORRECT, CandidateStatus.PATCH_FAILED, CandidateStatus.REJECTED,
        CandidateStatus.SCREENED, CandidateStatus.DUPLICATE)
        and failure_reason(r.status, r.error) == reason}
    assert set(shown_ids(page)) == same
    assert page.locator("#reason-filter .reason").inner_text() == reason


def test_the_browser_pages_through_many_candidates(page: Any, serve: Any, rich_runs: Path):
    rows = rows_of(rich_runs / "harvest-run")
    base = serve([rich_runs])
    page.goto(f"{base}/runs/harvest-run/programs?size=10&sort=id&order=desc")
    assert shown_ids(page) == sorted((r.id for r in rows), reverse=True)[:10]
    page.locator("#page-next").click()
    page.wait_for_url("**page=2**")
    assert shown_ids(page) == sorted((r.id for r in rows), reverse=True)[10:20]
    assert "page 2 of" in page.locator("#pager").inner_text()


def test_a_failure_reason_on_the_overview_opens_its_candidates(page: Any, serve: Any,
                                                               stored_runs: Path):
    incorrect = [r for r in rows_of(stored_runs / "counter-run")
                 if r.status is CandidateStatus.INCORRECT]
    assert incorrect
    base = serve([stored_runs])
    page.goto(f"{base}/runs/counter-run")
    page.locator("#failures a", has_text="VALUE N exceeds the limit N").click()
    page.wait_for_url(lambda url: "/programs?reason=" in url)
    assert set(shown_ids(page)) == {r.id for r in incorrect}
    assert page.locator("#filter-status").input_value() == "incorrect"
    assert all(s == "incorrect" for s in
               page.locator("#programs tr[data-id]").evaluate_all(
                   "rows => rows.map(r => r.dataset.status)"))
    # The status counts link to their candidates, and "browse every program" to all of them.
    page.goto(f"{base}/runs/counter-run")
    page.locator("#status-counts a", has_text="incorrect").click()
    page.wait_for_url("**/programs?status=incorrect")
    assert set(shown_ids(page)) == {r.id for r in incorrect}
    page.go_back()
    page.locator("#browse-programs").click()
    page.wait_for_url("**/runs/counter-run/programs")
    assert total(page) == len(rows_of(stored_runs / "counter-run"))


def test_the_best_program_can_be_copied_and_downloaded(page: Any, serve: Any,
                                                       stored_runs: Path):
    best = best_of(stored_runs / "counter-run")
    base = serve([stored_runs])
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{base}/runs/counter-run")
    panel = page.locator("#best-code")
    assert panel.get_attribute("data-candidate") == str(best.id)
    assert f"score {best.score:.6g}" in panel.locator("h2").inner_text()
    assert "VALUE = " in panel.locator(".source-code").inner_text()
    element_shot(panel, "best-code")

    panel.locator("#best-copy").click()
    page.wait_for_function("document.getElementById('best-copy-result').textContent !== ''")
    assert page.locator("#best-copy-result").inner_text() == (
        f"copied {len(best.source)} characters")
    assert page.evaluate("navigator.clipboard.readText()") == best.source

    with page.expect_download() as download:
        panel.locator("#best-download").click()
    assert download.value.suggested_filename == f"candidate-{best.id}.py"
    assert Path(download.value.path()).read_text() == best.source


def test_a_candidate_shows_its_diff_to_the_initial_program(page: Any, serve: Any,
                                                           stored_runs: Path):
    best = best_of(stored_runs / "counter-run")
    initial = next(r for r in rows_of(stored_runs / "counter-run") if r.parent_id is None)
    value = best.source.split("VALUE = ")[1].split()[0]
    base = serve([stored_runs])
    page.goto(f"{base}/runs/counter-run/candidates/{best.id}")
    diff = page.locator("#diff-initial pre.diff")
    assert diff.locator(".dl.head").first.inner_text() == f"--- initial program {initial.id}"
    assert diff.locator(".dl.del").first.inner_text() == "-VALUE = 1"
    assert diff.locator(".dl.add").first.inner_text() == f"+VALUE = {value}"
    page.goto(f"{base}/runs/counter-run/candidates/{initial.id}")
    assert "This is an initial program." in page.locator("#diff-initial").inner_text()


def test_a_program_of_several_files_diffs_each_file_to_the_initial(page: Any, serve: Any,
                                                                   tmp_path: Path):
    from support.several_files import run_package

    run_dir, _ = in_thread(lambda: run_package(tmp_path / "runs"))
    rows = rows_of(run_dir)
    changed = next(r for r in rows if r.description.startswith("Sort"))
    base = serve([tmp_path / "runs"])
    page.goto(f"{base}/runs/{run_dir.name}/candidates/{changed.id}")
    diffs = page.locator("#diff-initial .file-diff")
    assert [diffs.nth(i).get_attribute("data-path") for i in range(diffs.count())] == [
        "schedule/order.py", "schedule/assign.py"]
    order = page.locator("#diff-initial .file-diff[data-path='schedule/order.py']")
    assert order.locator(".dl.head").first.inner_text() == (
        "--- initial program 1: schedule/order.py")
    # Its download is a zip of its files.
    with page.expect_download() as download:
        page.locator("#candidate-download").click()
    assert download.value.suggested_filename == f"candidate-{changed.id}.zip"


def test_pages_answer_errors_as_pages_and_the_api_as_json(page: Any, serve: Any,
                                                          stored_runs: Path):
    base = serve([stored_runs])
    for path, status, text in [
            ("/runs/no-such-run", 404, "no run 'no-such-run'"),
            ("/runs/counter-run/candidates/9999", 404, "no candidate 9999"),
            ("/runs/counter-run/candidates/abc", 400, "candidate_id"),
            ("/runs/counter-run/programs?sort=bogus", 400, "cannot sort by 'bogus'"),
            ("/runs/counter-run/programs?page=0", 400, "page must be at least 1"),
            ("/runs/counter-run/programs?island=x", 400, "island must be a whole number"),
            ("/runs/counter-run/nothing-here", 404, "Not Found")]:
        response = page.goto(base + path)
        assert response.status == status, path
        assert response.headers["content-type"].startswith("text/html"), path
        assert page.locator("#error-page h1").inner_text().startswith(str(status))
        assert text in page.locator("#error-detail").inner_text(), path
        assert page.locator("#error-page a[href='/']").count() == 1
    page.goto(base + "/runs/counter-run/candidates/9999")
    page.locator("#error-page a", has_text="overview").click()
    page.wait_for_url("**/runs/counter-run")
    api = page.request.get(base + "/api/runs/no-such-run/overview")
    assert api.status == 404 and api.json() == {"detail": "no run 'no-such-run'"}
    bad = page.request.get(base + "/api/runs/counter-run/programs?sort=bogus")
    assert bad.status == 400 and "cannot sort by" in bad.json()["detail"]


def test_long_failure_reasons_wrap_in_full(page: Any, serve: Any, metrics_runs: Path):
    base = serve([metrics_runs])
    page.goto(f"{base}/runs/metrics-run")
    cell = page.locator("#failures td.reason").filter(has_text=LONG_TAIL).first
    assert cell.inner_text() == f"VALUE N exceeds the limit {LONG_TAIL}"  # whole, not cut
    box = cell.bounding_box()
    assert box["height"] > 40  # on several lines
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.goto(f"{base}/runs/metrics-run/programs?status=incorrect")
    cell = page.locator("#programs td.reason").first
    assert LONG_TAIL in cell.inner_text() and cell.bounding_box()["height"] > 40
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def tree_fill(page: Any, node_id: int) -> str:
    return page.locator(f"#tree g.node[data-id='{node_id}'] circle").get_attribute("fill")


def test_the_tree_colours_each_failure_apart_and_refits(page: Any, serve: Any, rich_runs: Path,
                                                        stored_runs: Path, tmp_path: Path):
    import shutil

    runs = tmp_path / "runs"
    shutil.copytree(stored_runs, runs)
    shutil.copytree(rich_runs / "harvest-run", runs / "harvest-run")
    harvest = rows_of(runs / "harvest-run")
    counter = rows_of(runs / "counter-run")
    base = serve([runs])

    def first(rows: list[CandidateRow], status: CandidateStatus, refused: bool = False) -> int:
        return next(r.id for r in rows if r.status is status
                    and bool(r.notes.get("reply_refused")) == refused)

    page.goto(f"{base}/runs/counter-run/tree")
    page.locator("#tree g.node").first.wait_for()
    page.locator("#colour-by").select_option("status")
    page.locator("#show-refused").check()
    page.wait_for_function("document.querySelectorAll('#tree g.node').length === "
                           f"{len(counter)}")
    incorrect = tree_fill(page, first(counter, CandidateStatus.INCORRECT))
    refused = tree_fill(page, first(counter, CandidateStatus.PATCH_FAILED, refused=True))
    page.goto(f"{base}/runs/harvest-run/tree")
    page.locator("#tree g.node").first.wait_for()
    page.locator("#colour-by").select_option("status")
    page.locator("#show-refused").check()
    page.wait_for_function("document.querySelectorAll('#tree g.node').length === "
                           f"{len(harvest)}")
    rejected = tree_fill(page, first(harvest, CandidateStatus.REJECTED))
    correct = tree_fill(page, first(harvest, CandidateStatus.CORRECT))
    assert len({incorrect, refused, rejected, correct}) == 4
    legend = page.locator("#tree-legend").inner_text()
    for name in ("incorrect", "refused reply", "patch failed", "rejected by a filter"):
        assert name in legend
    # After the filter the whole tree is in view: every node inside the box.
    frame = page.locator("#tree").bounding_box()
    inside = page.locator("#tree g.node circle").evaluate_all(
        "(circles, f) => circles.every(c => { const b = c.getBoundingClientRect();"
        " return b.left >= f.x - 1 && b.right <= f.x + f.width + 1 && b.top >= f.y - 1"
        " && b.bottom <= f.y + f.height + 1; })", frame)
    assert inside
    assert int(page.locator("#tree-count").inner_text().split()[0]) == len(harvest)


def test_the_plots_draw_a_real_run(page: Any, serve: Any, rich_runs: Path, metrics_runs: Path):
    with Store.open(rich_runs / "harvest-run", read_only=True) as store:
        spend = store.contexts.spend().cost_usd
        rows = store.candidates.list()
        evaluations = store.database.one("SELECT COUNT(*) FROM evaluations")
    children = [r for r in rows if r.parent_id is not None]
    base = serve([rich_runs, metrics_runs])

    page.goto(f"{base}/runs/harvest-run")
    for chart in ("plot-cost", "plot-best-cost", "plot-intent", "plot-model", "plot-occupancy",
                  "plot-size"):
        page.locator(f"#{chart} canvas").first.wait_for()
        assert int(page.locator(f"#{chart}").get_attribute("data-points")) > 0, chart
    data = page.request.get(f"{base}/api/runs/harvest-run/plots").json()
    assert data["cost"]["cost_usd"][-1] == pytest.approx(spend, rel=1e-6)
    best = best_of(rich_runs / "harvest-run").score
    assert float(page.locator("#plot-best-cost").get_attribute("data-last")) == best
    models = data["rates"]["model"]
    assert {"alpha", "beta"} <= set(models)  # and "(tune)": the tune step's children
    for name, line in models.items():
        mine = [r for r in children if (r.model or f"({r.operator})") == name]
        assert sum(line["count"]) == len(mine)
        correct = sum(round(s * n) for s, n in zip(line["success"], line["count"]) if n)
        assert correct == sum(r.status is CandidateStatus.CORRECT for r in mine)
    legend = page.locator("#plot-model .u-legend").inner_text()
    assert "alpha" in legend and "beta" in legend
    page.locator("#rate-kind").select_option("improved")
    page.wait_for_function("document.querySelector('#plot-intent .u-legend') !== null")
    running = data["occupancy"]["running"]
    assert running[-1] == 0 and data["occupancy"]["peak"] >= 1
    assert len(data["occupancy"]["seconds"]) == 2 * evaluations
    assert len(data["sizes"]["id"]) == sum(r.source is not None for r in rows)
    assert page.locator("#plot-pareto-box").is_hidden() == (not data["pareto"]["x"])
    element_shot(page.locator("#plots"), "plots")

    # Two metrics: the Pareto front, checked against every pair of programs.
    page.goto(f"{base}/runs/metrics-run")
    page.locator("#plot-pareto canvas").first.wait_for()
    correct = [r for r in rows_of(metrics_runs / "metrics-run")
               if r.status is CandidateStatus.CORRECT]
    points = {r.id: (int(r.score), -abs(int(r.score) - 6)) for r in correct}
    front = sorted(i for i, (v, p) in points.items() if not any(
        w >= v and q >= p and (w, q) != (v, p) for w, q in points.values()))
    assert 0 < len(front) < len(points)
    note = page.locator("#pareto-note").inner_text()
    assert note.startswith(f"{len(front)} of {len(points)} correct programs on the front")
    assert note.split(": ")[1].split() == [f"#{i}" for i in front]
    assert {page.locator("#pareto-x").input_value(),
            page.locator("#pareto-y").input_value()} == {"value", "balance"}
    element_shot(page.locator("#plot-pareto-box"), "pareto")
