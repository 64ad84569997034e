"""The UI's pages in headless Chromium against a real stored run: click through runs →
overview → tree → candidate and check what a person sees (scores, code, diff lines, failure
reasons, the prompt and reply), compare two runs, open an imported ShinkaEvolve trace."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from conftest import LIMIT
from foreign import make_shinka_results

from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.store.store import Store


def figures(runs: Path) -> dict[str, Any]:
    store = Store.open(runs / "counter-run", read_only=True)
    try:
        best = store.candidates.best(Objective("maximize"))
        assert best is not None
        return {
            "best": best,
            "parent": store.candidates.get(best.parent_id),
            "incorrect": store.candidates.list(CandidateStatus.INCORRECT),
            "refused": [c for c in store.candidates.list(CandidateStatus.PATCH_FAILED)
                        if c.error.startswith("no SEARCH/REPLACE edit")],
            "tree": store.candidates.count("correct", "incorrect", "screened", "pending"),
            "all": store.candidates.count(),
        }
    finally:
        store.close()


def value_of(source: str | None) -> int:
    match = re.search(r"VALUE = (\d+)", source or "")
    assert match
    return int(match.group(1))


def test_runs_overview_tree_candidate(page: Any, serve: Any, stored_runs: Path):
    facts = figures(stored_runs)
    best, parent = facts["best"], facts["parent"]
    base = serve([stored_runs])

    page.goto(base + "/")
    row = page.locator("#runs tr[data-key='counter-run']")
    assert row.locator(".status").inner_text() == "finished"
    assert row.locator(".best").inner_text() == f"{best.score:.6g}"
    assert "scripted" in row.inner_text() and "shinka" in row.inner_text()

    row.locator("a.run-link").click()
    page.wait_for_url("**/runs/counter-run")
    assert page.locator("#best-score").inner_text() == f"{best.score:.6g}"
    failures = page.locator("#failures").inner_text()
    assert "VALUE N exceeds the limit N" in failures
    assert "no SEARCH/REPLACE edit found in the reply" in failures
    assert "scripted" in page.locator("#models").inner_text()
    page.locator("#chart-evals canvas").first.wait_for()
    page.locator("#chart-time canvas").first.wait_for()
    assert page.locator("#steer").count() == 0  # finished: nothing to steer

    page.get_by_role("link", name="Tree", exact=True).click()
    page.wait_for_url("**/tree")
    page.locator("#tree g.node").first.wait_for()
    assert page.locator("#tree g.node").count() == facts["tree"]
    best_lineage = page.locator("#tree g.node.best")
    assert best_lineage.count() >= 2  # the best program and its ancestors
    page.locator("#show-refused").check()
    page.wait_for_function(f"document.querySelectorAll('#tree g.node').length === {facts['all']}")
    page.locator("#colour-by").select_option("island")
    # collapse the root: only it stays
    page.locator("#tree g.node[data-id='1'] .toggle").click()
    assert page.locator("#tree g.node").count() == 1
    page.locator("#tree g.node[data-id='1'] .toggle").click()
    page.locator("#colour-by").select_option("score")

    page.locator(f"#tree g.node[data-id='{best.id}'] circle").click()
    page.wait_for_url(f"**/candidates/{best.id}")
    assert page.locator("h1").inner_text().startswith(f"Candidate {best.id}")
    assert page.locator("#candidate-score").inner_text() == f"{best.score:.6g}"
    assert f"VALUE = {value_of(best.source)}" in page.locator("#code .source-code").inner_text()
    diff = page.locator("#diff pre.diff")
    assert diff.locator(".dl.del").first.inner_text() == f"-VALUE = {value_of(parent.source)}"
    assert diff.locator(".dl.add").first.inner_text() == f"+VALUE = {value_of(best.source)}"
    prompt = page.locator("#prompt").inner_text()
    assert "## Current program" in prompt and "SEARCH" in prompt
    assert page.locator("#reply-format").inner_text() == "diff"

    page.locator("#against").fill("1")
    page.locator("#against-form button").click()
    page.wait_for_url("**against=1")
    assert "-VALUE = 1" in page.locator("#diff").inner_text()

    incorrect = facts["incorrect"][0]
    page.goto(f"{base}/runs/counter-run/candidates/{incorrect.id}")
    assert f"exceeds the limit {LIMIT}" in page.locator("#evaluation .error").first.inner_text()

    refused = facts["refused"][0]
    page.goto(f"{base}/runs/counter-run/candidates/{refused.id}")
    assert "no SEARCH/REPLACE edit found" in page.locator("#refusal").inner_text()
    assert "I would rather not change anything." in page.locator("#prompt .reply").inner_text()


def test_compare_with_an_imported_shinka_run(page: Any, serve: Any, stored_runs: Path,
                                             tmp_path: Path):
    runs = tmp_path / "runs"
    shutil.copytree(stored_runs, runs)
    shinka = make_shinka_results(runs / "shinka_results")
    before = sorted(p.name for p in shinka.iterdir())
    base = serve([runs])

    page.goto(base + "/")
    imported = page.locator("#runs tr[data-key='shinka_results']")
    assert imported.locator(".status").inner_text() == "imported"
    assert imported.locator(".best").inner_text() == "0.4"
    assert "shinkaevolve" in imported.inner_text()
    assert sorted(p.name for p in shinka.iterdir()) == before  # the trace is never written to

    page.locator("input[name=run][value='counter-run']").check()
    page.locator("input[name=run][value='shinka_results']").check()
    page.get_by_role("button", name="Compare selected runs").click()
    page.wait_for_url("**/compare?**")
    page.locator("#chart-compare canvas").first.wait_for()
    table = page.locator("#compare-table").inner_text()
    assert "counter-run" in table and "shinka_results" in table
    page.locator("#x-axis").select_option("tokens")
    page.locator("#chart-compare canvas").first.wait_for()

    page.goto(base + "/runs/shinka_results")
    assert page.locator("#best-score").inner_text() == "0.4"
    assert page.locator("#steer").count() == 0
    page.goto(base + "/runs/shinka_results/candidates/2")
    assert "STEP = 0.4" in page.locator("#code").inner_text()


def test_a_server_that_stops_answering_is_shown_not_thrown(page: Any, tmp_path: Path,
                                                          stored_runs: Path):
    """The pages poll the server; once it is gone every poll says so in one banner instead of
    raising an unhandled 'Failed to fetch' (the page fixture fails on any page error)."""
    from cambrian.ui.server import BackgroundServer, build_server

    server = BackgroundServer(build_server([stored_runs], port=0,
                                           cache_dir=tmp_path / "ui-cache")).start()
    page.goto(server.url)
    page.goto(server.base + "/runs/counter-run")
    answered = page.evaluate("async () => (await cambrianFetch('/api/runs/counter-run/series')).ok")
    assert answered is True and page.locator("#server-unreachable").count() == 0
    server.stop()
    assert page.evaluate("async () => await cambrianFetch('/api/runs/counter-run/series')") is None
    banner = page.locator("#server-unreachable")
    banner.wait_for()
    assert "server is not answering" in banner.inner_text()
    assert page.evaluate("document.documentElement.dataset.server") == "unreachable"


def test_every_script_polls_through_the_guarded_fetch():
    """A bare fetch() rejects when the server is gone; the scripts use cambrianFetch (net.js)."""
    scripts = Path(__file__).parents[2] / "cambrian" / "ui" / "static" / "js"
    bare = [path.name for path in scripts.glob("*.js")
            if path.name != "net.js" and re.search(r"(?<![\w.])fetch\(", path.read_text())]
    assert bare == []
