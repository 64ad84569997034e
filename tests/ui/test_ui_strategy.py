"""The overview of a ``--search contest`` run in headless Chromium: the phase timeline, the
niche map with each niche's share over the run, the steering events and the reflections."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import in_thread, screenshot
from support.contest_task import reply, write_contest_task
from support.scripted_llm import ScriptedLLM

from cambrian.api import start


@pytest.fixture(scope="module")
def contest_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ui-contest")
    task = write_contest_task(root / "task")
    with ScriptedLLM(reply) as llm:
        evolution = start(task, run_dir=root / "runs" / "contest-run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "search.algorithm=contest",
            "evolution.generations=12", "novelty.enabled=false", "meta.enabled=false"])
        in_thread(lambda: asyncio.run(evolution.run()))
        evolution.store.close()
    return root / "runs"


def test_the_overview_draws_phases_niches_and_reflections(page: Any, serve: Any,
                                                          contest_runs: Path):
    base = serve([contest_runs])
    page.goto(base + "/runs/contest-run")
    timeline = page.locator("#phases .phase-timeline .phase")
    assert timeline.count() >= 2
    assert timeline.first.inner_text() == "exploration"
    assert "the problem is read" in page.locator("#phases table").inner_text()
    assert "combined by combiner" in page.locator("#phases ul").inner_text()
    niches = page.locator("#niches").inner_text()
    assert "greedy" in niches and "local search" in niches
    assert page.locator("#niche-shares tr").count() >= 3  # a header and a row per family
    assert "favour [refinement]" in page.locator("#reflections").inner_text()
    screenshot(page, "overview-contest")
