"""Steering a live run from the browser. The run is a real ``cambrian run`` process talking to
the scripted LLM; the UI server runs in this process, reading the run's store and its live
event feed (two models, one priced, and the meta-scratchpad, so that its screenshot shows them).
Guidance added in the page reaches the next prompt, pause stops new proposals, the charts
append only the new points, a budget change is applied, stop ends the run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import screenshot, scripted_sets
from rich_runs import PRICED
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.core.events import BanditSnapshot, ControlChanged, SessionEnded, SessionStarted
from cambrian.core.objective import Objective
from cambrian.search.live_feed import live_file
from cambrian.store.store import Store

MARKER = "GUIDANCE-FROM-THE-PAGE try steps of ten"


def wait_for(condition: Callable[[], Any], timeout: float = 60.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or condition}")


def read(run_dir: Path, query: Callable[[Store], Any]) -> Any:
    store = Store.open(run_dir, read_only=True)
    try:
        return query(store)
    finally:
        store.close()


@pytest.fixture()
def live_run(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    task = write_counter_task(tmp_path / "task", limit=10**9)
    run_dir = tmp_path / "runs" / "live-run"
    with ScriptedLLM(incrementing, delay_s=0.3) as llm:
        models = [llm.model_config(name="alpha"), llm.model_config(name="beta", **PRICED)]
        sets = scripted_sets(llm, 500, "meta.enabled=true", "meta.interval=4", models=models)
        overrides = [arg for s in sets for arg in ("--set", s)]
        log = (tmp_path / "run.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "cambrian", "run", str(task), "-o", str(run_dir), "-q",
             *overrides], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_for(lambda: live_file(run_dir).exists() and process.poll() is None, 60,
                     "the run's live feed")
            yield run_dir, process
        finally:
            if process.poll() is None:
                os.kill(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
            log.close()


def mutation_prompts(store: Store) -> list[str]:
    return ["\n".join(m["content"] for m in c.messages) for c in store.contexts.list("mutation")]


def test_guide_pause_budget_and_stop_a_live_run(page: Any, serve: Any, live_run: Any):
    run_dir, process = live_run
    assert oct(live_file(run_dir).stat().st_mode & 0o777) == "0o600"
    base = serve([run_dir.parent])
    series_requests: list[str] = []
    page.on("request", lambda r: series_requests.append(r.url) if "/series" in r.url else None)

    page.goto(base + "/runs/live-run")
    assert page.locator("#run-status").inner_text() == "running"
    page.locator("#steer").wait_for()
    page.wait_for_function("document.getElementById('live').dataset.state === 'live'")
    # Live updates: the evaluation count grows without a reload.
    shown = page.locator("#evaluations").inner_text()
    page.wait_for_function(f"document.getElementById('evaluations').innerText !== {shown!r}",
                           timeout=30_000)

    # Guidance added in the page is in the next prompts.
    page.locator("#guidance-text").fill(MARKER)
    page.locator("#guidance-append").click()
    page.locator("#steer-result").filter(has_text="guidance version").wait_for()
    wait_for(lambda: read(run_dir, lambda s: any(MARKER in p for p in mutation_prompts(s))),
             60, "a prompt holding the guidance")
    history = read(run_dir, lambda s: s.guidance.history())
    assert (history[-1].source, history[-1].action, history[-1].text) == ("ui", "append", MARKER)
    page.locator("#guidance-history").filter(has_text=MARKER).wait_for()

    # Pause: no new proposal while paused; the page shows it, fed by the run's events.
    page.locator("#pause").click()
    wait_for(lambda: read(run_dir, lambda s: [e for e in s.events.of_type(ControlChanged)
                                              if e.action == "pause"]), 30, "the pause")
    page.locator("#paused").wait_for(timeout=15_000)
    time.sleep(1.5)  # the proposal in flight when the pause came may still finish
    paused_at = read(run_dir, lambda s: s.contexts.count("mutation"))
    time.sleep(2.5)
    assert read(run_dir, lambda s: s.contexts.count("mutation")) == paused_at
    assert process.poll() is None
    # The charts fetched only the points after the last one they had, and have them all.
    points = len(read(run_dir, lambda s: s.views.evaluation_points()))
    page.wait_for_function(
        f"document.getElementById('chart-evals').dataset.points === '{points}'")
    assert any("after=" in url for url in series_requests)
    page.locator("#resume").click()
    wait_for(lambda: read(run_dir, lambda s: s.contexts.count("mutation")) > paused_at, 30,
             "proposals after resuming")

    # Budget: lower the evaluation budget; the run applies and records it.
    page.locator("#budget-generations").fill("400")
    page.locator("#budget").click()
    wait_for(lambda: read(run_dir, lambda s: s.runs.info().config["evolution"]["generations"]
                          == 400), 60, "the budget change")

    # Targeted guidance from a candidate's page, for its lineage.
    best = read(run_dir, lambda s: s.candidates.best(Objective("maximize")))
    page.goto(f"{base}/runs/live-run/candidates/{best.id}")
    page.locator("#guidance-target").select_option(f"lineage:{best.id}")
    page.locator("#guidance-text").fill("keep this lineage going")
    page.locator("#guidance-append").click()
    page.locator("#lineage").filter(has_text="keep this lineage going").wait_for()
    latest = read(run_dir, lambda s: s.guidance.latest(f"lineage:{best.id}"))
    assert (latest.text, latest.source) == ("keep this lineage going", "ui")
    page.goto(base + "/runs/live-run")
    wait_for(lambda: read(run_dir, lambda s: len(s.meta_notes.list()) >= 2
                          and len(s.events.of_type(BanditSnapshot)) >= 3), 60,
             "notes of the meta-scratchpad and bandit snapshots")
    page.locator("#scratchpad").wait_for()
    assert "generations 500 → 400" in page.locator("#controls").inner_text()
    page.wait_for_function("Number(document.getElementById('chart-bandit').dataset.points) >= 3")
    screenshot(page, "steer")

    # Stop: the run ends cleanly, and the page says so once the feed closes.
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#stop").click()
    assert process.wait(timeout=90) == 0
    ended = read(run_dir, lambda s: s.events.of_type(SessionEnded))
    assert ended[-1].reason == "stopped on request (ui)"
    page.wait_for_function(
        "document.getElementById('run-status').innerText === 'stopped'", timeout=30_000)
    actions = read(run_dir, lambda s: [(e.action, e.source)
                                       for e in s.events.of_type(ControlChanged)])
    assert actions == [("pause", "ui"), ("resume", "ui"), ("budget", "ui"), ("stop", "ui")]
    assert not live_file(run_dir).exists()
    assert len(read(run_dir, lambda s: s.events.of_type(SessionStarted))) == 1
