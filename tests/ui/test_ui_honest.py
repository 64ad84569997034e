"""The web UI a user can trust, on live `cambrian run` processes talking to the scripted LLM
(issue 32): every steering request is checked where it is made and answered with what the run
will do, the run's own verdict arrives in the page as it happens, guidance that cannot be used is
refused rather than silently dropped, a paused run says so everywhere its state is shown, and the
"doing now" panel shows the proposals and evaluations in flight, the live channel, and each
model's errors, retries and latency."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import in_thread, screenshot, scripted_sets
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from test_ui_live import read, wait_for

from cambrian.api import start
from cambrian.core.events import ControlChanged
from cambrian.meta.guidance import GuidanceBoard
from cambrian.search.live_feed import live_file


class LiveRun:
    """A `cambrian run` process on a pseudo-terminal (so its progress bar is drawn), its
    folder, and what it printed."""

    def __init__(self, process: subprocess.Popen[bytes], run_dir: Path, master: int) -> None:
        self.process, self.run_dir = process, run_dir
        self.output = bytearray()
        self._master = master
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output.extend(chunk)

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace")


def start_run(tmp_path: Path, llm: ScriptedLLM, *extra: str, sleep: float = 0.0) -> LiveRun:
    task = write_counter_task(tmp_path / "task", limit=10**9, sleep=sleep)
    run_dir = tmp_path / "runs" / "honest-run"
    sets = scripted_sets(llm, 500, "llm.retries.initial_backoff_s=0.05",
                         "llm.retries.max_backoff_s=0.1", *extra)
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "cambrian", "run", str(task), "-o", str(run_dir),
         *[arg for s in sets for arg in ("--set", s)]],
        stdout=slave, stderr=slave, stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "200", "TERM": "xterm"})
    os.close(slave)
    run = LiveRun(process, run_dir, master)
    wait_for(lambda: live_file(run_dir).exists() and process.poll() is None, 60,
             "the run's live feed")
    return run


def stop(run: LiveRun) -> None:
    if run.process.poll() is None:
        os.kill(run.process.pid, signal.SIGTERM)
        run.process.wait(timeout=30)


@pytest.fixture()
def honest_run(tmp_path: Path) -> Iterator[LiveRun]:
    with ScriptedLLM(incrementing, delay_s=0.3) as llm:
        run = start_run(tmp_path, llm, "prompt.max_guidance_chars=300")
        try:
            yield run
        finally:
            stop(run)


def control_events(run_dir: Path) -> list[ControlChanged]:
    return read(run_dir, lambda s: s.events.of_type(ControlChanged))


def api(page: Any) -> Callable[[str, dict[str, Any]], Any]:
    """POST JSON from the page itself (its cookie, its origin), as its script does."""
    def post(path: str, body: Any) -> Any:
        return page.evaluate(
            """async ([path, body]) => {
                 const r = await fetch(path, {method: "POST", headers: {"Content-Type":
                   "application/json"}, body: typeof body === "string" ? body : JSON.stringify(body)});
                 return {status: r.status, body: await r.json()};
               }""", [path, body])
    return post


def test_steering_is_checked_answered_and_its_verdict_shown_live(page: Any, serve: Any,
                                                                  honest_run: LiveRun):
    run_dir = honest_run.run_dir
    base = serve([run_dir.parent])
    page.goto(base + "/runs/honest-run")
    page.wait_for_function("document.getElementById('live').dataset.state === 'live'")
    post = api(page)
    result = page.locator("#steer-result")

    # A negative budget: refused where it is made, in the page, with the setting's range.
    page.locator("#budget-generations").fill("-5")
    page.locator("#budget").click()
    result.filter(has_text="generations -5: input should be greater than or equal to 0").wait_for()
    assert "error" in (result.get_attribute("class") or "")
    # 2.7 evaluations is refused, not truncated to 2.
    page.locator("#budget-generations").fill("2.7")
    page.locator("#budget").click()
    result.filter(has_text="generations must be a whole number, got '2.7'").wait_for()
    # nan and inf: 400 with a clear message, never stored or applied.
    for budget in ({"max_cost_usd": "nan"}, {"generations": "inf"}):
        answer = post("/api/runs/honest-run/control", {"action": "budget", "budget": budget})
        assert answer["status"] == 400 and "must be a finite number" in answer["body"]["detail"]
    raw = post("/api/runs/honest-run/control",  # JSON's NaN, which Python's parser reads
               '{"action": "budget", "budget": {"max_cost_usd": NaN}}')
    assert raw["status"] == 400 and "must be a finite number" in raw["body"]["detail"]
    answer = post("/api/runs/honest-run/control", {"action": "budget", "budget": {"generations": 4},
                                                   "confirm": "yes"})
    assert answer["status"] == 400 and "confirm must be a boolean" in answer["body"]["detail"]
    assert read(run_dir, lambda s: s.control.pending()) == []

    # A budget at or below what the run has done would end it: the page asks first.
    wait_for(lambda: read(run_dir, lambda s: s.candidates.count("correct")) >= 3, 60,
             "a few evaluated children")
    questions: list[str] = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    page.locator("#budget-generations").fill("1")
    page.locator("#budget").click()
    result.filter(has_text="the run would stop at once").wait_for()  # asked, then declined
    assert "the run would stop at once" in questions[0]
    answer = post("/api/runs/honest-run/control", {"action": "budget", "budget": {"generations": 0}})
    assert answer["status"] == 409 and '"confirm": true' in answer["body"]["detail"]
    assert read(run_dir, lambda s: s.control.pending()) == [] and control_events(run_dir) == []

    # An accepted change is answered with what the run will do, then the run's verdict
    # replaces "waiting" in the page as it happens.
    page.locator("#budget-generations").fill("400")
    page.locator("#budget").click()
    result.filter(has_text="evaluation budget 500 → 400 children").wait_for()
    page.locator("#steer-requests li[data-state=applied]").filter(
        has_text="applied by the run: generations 500 → 400").wait_for(timeout=15_000)

    # Guidance: a target that does not exist is refused; so is guidance over the limit (shown
    # beside the box), and the guidance active before it stays active.
    answer = post("/api/runs/honest-run/guidance", {"action": "append", "text": "x",
                                                    "target": "candidate:99999"})
    assert answer["status"] == 400 and "no candidate 99999" in answer["body"]["detail"]
    assert "at most 300 characters" in page.locator("#guidance-limit").inner_text()
    page.locator("#guidance-text").fill("use steps of ten")
    page.locator("#guidance-append").click()
    result.filter(has_text="is active from the next proposal on").wait_for()
    huge = "y" * 100_000
    page.locator("#guidance-text").fill(huge)
    assert page.locator("#guidance-count").get_attribute("class") == "error"
    page.locator("#guidance-append").click()
    result.filter(has_text="over the limit of 300 (prompt.max_guidance_chars)").wait_for()
    assert read(run_dir, lambda s: s.guidance.latest("").text) == "use steps of ten"
    wait_for(lambda: read(run_dir, lambda s: any(
        "use steps of ten" in m["content"] for c in s.contexts.list("mutation")[-3:]
        for m in c.messages)), 60, "a prompt holding the earlier guidance")
    # Long guidance within the limit wraps: the page does not grow wide.
    page.locator("#guidance-text").fill("z" * 250)
    page.locator("#guidance-replace").click()
    page.locator("#guidance-history").filter(has_text="z" * 250).wait_for()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1300


def test_paused_and_doing_now_everywhere_with_transport_errors(page: Any, serve: Any,
                                                              tmp_path: Path):
    # Every fifth request answers 500, every seventh 429: the retry policy tries them again.
    def status_for(index: int) -> int:
        return 500 if index % 5 == 3 else 429 if index % 7 == 4 else 200

    with ScriptedLLM(incrementing, delay_s=0.4, status_for=status_for) as llm:
        run = start_run(tmp_path, llm, sleep=1.5)
        try:
            run_dir = run.run_dir
            base = serve([run_dir.parent])
            page.goto(base + "/runs/honest-run")
            page.locator("#connection[data-state=live]").filter(has_text="live channel: up").wait_for()
            # Doing now: a proposal in flight (parent, intent, model, since) and an evaluation.
            page.locator("#now-proposals tbody tr").first.wait_for(timeout=30_000)
            row = page.locator("#now-proposals tbody tr").first.inner_text()
            assert "scripted" in row and "ago" in row, row
            page.locator("#now-evaluations a").first.wait_for(timeout=30_000)
            # Transport errors, by kind, with retries and latency.
            wait_for(lambda: len(llm.requests) >= 12, 60, "a dozen requests")
            page.locator("#now-transport td.reason").filter(has_text="HTTP 500").wait_for(
                timeout=30_000)
            transport = page.locator("#now-transport tr[data-model=scripted]").inner_text()
            assert "HTTP 429" in transport and " s" in transport
            page.wait_for_function(
                "Number(document.getElementById('chart-llm-errors').dataset.points) >= 1",
                timeout=15_000)
            screenshot(page, "now")

            # Pause: the overview, the runs list, `cambrian status` and the run's terminal.
            page.locator("#pause").click()
            page.locator("#steer-requests li[data-state=applied]").wait_for(timeout=15_000)
            page.locator("#paused").wait_for(timeout=15_000)
            page.goto(base + "/")
            assert page.locator("#runs tr[data-key=honest-run] .run-paused").inner_text() == "paused"
            rows = page.evaluate("fetch('/api/runs').then(r => r.json())")
            assert rows[0]["status"] == "running" and rows[0]["paused"] is True
            status = subprocess.run([sys.executable, "-m", "cambrian", "status", str(run_dir)],
                                    capture_output=True, text=True, timeout=60,
                                    env={**os.environ, "COLUMNS": "200"})
            assert "running, paused" in status.stdout, status.stdout
            assert "HTTP 500" in status.stdout and "HTTP 429" in status.stdout
            wait_for(lambda: "proposals paused" in run.text, 15, "the terminal's pause line")
            wait_for(lambda: "paused" in run.text.rsplit("proposals paused", 1)[1], 15,
                     "the progress line saying paused")
            # The progress bar follows a budget change.
            answer = api(page)("/api/runs/honest-run/control",
                               {"action": "budget", "budget": {"generations": 321}})
            assert answer["status"] == 200
            wait_for(lambda: "/321" in run.text, 15, "the progress bar's new total")
        finally:
            stop(run)


def test_run_with_ui_on_a_port_in_use_leaves_no_run_folder(tmp_path: Path):
    import socket

    task = write_counter_task(tmp_path / "task")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run_dir = tmp_path / "runs" / "never"
        done = subprocess.run(
            [sys.executable, "-m", "cambrian", "run", str(task), "-o", str(run_dir), "-q",
             "--ui", "--ui-port", str(port), "--model", "stand-in", "--api-base",
             "http://127.0.0.1:9/v1"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"cannot listen on port {port}" in done.stderr and "--ui-port" in done.stderr
    assert not run_dir.exists() and not (tmp_path / "runs").exists()


def test_guidance_too_long_for_the_window_is_shortened_visibly(page: Any, serve: Any,
                                                               tmp_path: Path):
    """Within prompt.max_guidance_chars but beyond what a small window holds beside the
    program: the prompt shows it shortened and says so, and the candidate page says so."""
    task = write_counter_task(tmp_path / "task")
    marker = "GUIDANCE-HEAD keep the value odd. "
    with ScriptedLLM(incrementing) as llm:
        model = llm.model_config(context_window=3072)
        evolution = start(task, run_dir=tmp_path / "runs" / "small-window", overrides=[
            "llm.models=" + json.dumps([model]), "evolution.generations=2",
            "novelty.enabled=false", "meta.enabled=false", "prompt.max_guidance_chars=40000"])
        GuidanceBoard(evolution.ctx.recorder, evolution.run_dir).change(
            "append", marker + "and more words " * 2000, source="test")
        in_thread(lambda: asyncio.run(evolution.run()))
        evolution.store.close()
    prompts = read(tmp_path / "runs" / "small-window", lambda s: [
        "\n".join(m["content"] for m in c.messages) for c in s.contexts.list("mutation")])
    assert prompts and all(marker.strip() in p and "[shortened for this prompt:" in p
                           for p in prompts)
    child = read(tmp_path / "runs" / "small-window",
                 lambda s: [c.id for c in s.candidates.list() if c.id != 1][0])
    base = serve([tmp_path / "runs"])
    page.goto(f"{base}/runs/small-window/candidates/{child}")
    assert "guidance was shortened" in page.locator("#guidance-shortened").inner_text()
