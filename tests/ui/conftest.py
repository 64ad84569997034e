"""Fixtures of the web UI tests: Debian's headless Chromium driven by Playwright (never a
downloaded browser), a UI server on a free loopback port, and a real stored run made by a short
evolution with the scripted LLM."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.api import start

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]
LIMIT = 12  # the counter task's limit: a child above it is incorrect
REFUSED_AT = 2  # this call's reply has no edit, so the proposal is refused


def scripted_sets(llm: ScriptedLLM, generations: int, *extra: str,
                  models: list[dict[str, Any]] | None = None) -> list[str]:
    return ["llm.models=" + json.dumps(models or [llm.model_config()]),
            f"evolution.generations={generations}", "novelty.enabled=false",
            "meta.enabled=false", "evolution.max_parallel_evaluations=1", *extra]


def refusing_once(messages: list[dict[str, str]], index: int) -> str:
    if index == REFUSED_AT:
        return "I would rather not change anything."
    return incrementing(messages, index)


@pytest.fixture(scope="module")  # not session: while it lives, this thread cannot asyncio.run
def playwright_browser() -> Iterator[Any]:
    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed (apt-get install -y chromium; "
                    "scripts/setup.sh does it when run as root)")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (pip install -e '.[dev]')")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        yield browser
        browser.close()


@pytest.fixture()
def page(playwright_browser: Any) -> Iterator[Any]:
    context = playwright_browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture(scope="session")
def stored_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding one finished run of the counter task: 7 children, one refused reply,
    one child over the limit (incorrect); its model costs $0.1 a call."""
    root = tmp_path_factory.mktemp("ui-runs")
    task = write_counter_task(root / "task", limit=LIMIT)
    with ScriptedLLM(refusing_once) as llm:
        priced = llm.model_config(price_input_per_mtok=500.0, price_output_per_mtok=2500.0)
        evolution = start(task, run_dir=root / "runs" / "counter-run",
                          overrides=scripted_sets(llm, 7, models=[priced]))
        in_thread(lambda: asyncio.run(evolution.run()))
        evolution.store.close()
    return root / "runs"


@pytest.fixture(scope="session")
def rich_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the runs of ``rich_runs.py`` (a judged C++ run with two models,
    novelty rejections, scratchpad notes, tune steps and a cost; a priced counter run whose
    evaluator prints)."""
    if shutil.which("g++") is None:
        pytest.skip("the judged run needs g++")
    from rich_runs import make_rich_runs

    root = tmp_path_factory.mktemp("ui-rich")
    return in_thread(lambda: make_rich_runs(root))


def in_thread(work: Any) -> Any:
    """Run ``work()`` on a thread of its own (Playwright's sync API owns this thread's event
    loop, so ``asyncio.run`` cannot run here)."""
    result: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # re-raised in the caller
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


@pytest.fixture()
def serve(tmp_path: Path, page: Any) -> Iterator[Any]:
    """serve(roots, read_only=False, token=None) -> base URL of a UI on a free port, which the
    page has opened once at the address the CLI prints (with its token: the cookie is set)."""
    from cambrian.ui.server import BackgroundServer, build_server

    servers: list[BackgroundServer] = []

    def start_server(roots: list[Path], read_only: bool = False,
                     token: str | None = None) -> str:
        server = BackgroundServer(build_server(roots, port=0, read_only=read_only, token=token,
                                               cache_dir=tmp_path / "ui-cache")).start()
        servers.append(server)
        opened = page.goto(server.url)
        assert opened is not None and opened.ok and page.url == server.base + "/", page.url
        return server.base

    yield start_server
    for server in servers:
        server.stop()


def screenshot(page: Any, name: str) -> None:
    """With CAMBRIAN_UI_SCREENSHOTS=DIR, keep a full-page screenshot (docs/ui/ is made so)."""
    import os

    folder = os.environ.get("CAMBRIAN_UI_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.wait_for_timeout(400)  # charts draw after their data arrives
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)
