"""The UI server without a browser: the run's live feed (never blocked by a slow reader, a
token file only the run's user can read), the access guard, the read-only mode, run states,
and `cambrian run --ui`."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import in_thread, scripted_sets
from fastapi.testclient import TestClient
from foreign import add_shinka_program, make_openevolve_output, make_shinka_results, shinka_child
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.core.events import CandidateEvaluated, SessionStarted
from cambrian.search.live_feed import LivePublisher, connect, live_file, probe, read_address
from cambrian.status import run_status
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store
from cambrian.ui.app import create_app
from cambrian.ui.cache import read_ledger
from cambrian.ui.data import overview_panels, run_row, run_state
from cambrian.ui.live import BrowserQueue
from cambrian.ui.runs import RunCatalog
from cambrian.ui.security import check_bind


def event(n: int) -> CandidateEvaluated:
    return CandidateEvaluated(candidate_id=n, status="ok", score=float(n), best_score=float(n),
                              evaluated=n, generations=10**6)


def test_the_live_feed_never_waits_for_a_slow_reader(tmp_path: Path):
    with LivePublisher(tmp_path) as publisher:
        assert oct(live_file(tmp_path).stat().st_mode & 0o777) == "0o600"
        assert probe(tmp_path)
        address = read_address(tmp_path)
        assert address is not None and address.host == "127.0.0.1"

        wrong = socket.create_connection((address.host, address.port), timeout=2)
        wrong.sendall(b"not-the-token\n")
        assert wrong.recv(100) == b""  # closed without a word
        wrong.close()

        slow, hello = connect(address, timeout=2)
        assert hello["kind"] == "hello"
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        began = time.perf_counter()
        for n in range(30_000):  # far more than the client's queue and the socket buffers
            publisher.publish(event(n))
        assert time.perf_counter() - began < 3.0
        slow.settimeout(5)
        received = b""
        while b'"overflow"' not in received:
            chunk = slow.recv(65536)
            assert chunk, "the feed closed before reporting the lost events"
            received += chunk
        slow.close()
    assert not live_file(tmp_path).exists() and not probe(tmp_path)


def test_a_slow_browser_loses_events_to_one_overflow_message():
    async def scenario() -> list[dict[str, object]]:
        browser = BrowserQueue(size=50)
        for n in range(120):
            browser.offer({"kind": "evaluated", "n": n})
        return [browser.queue.get_nowait() for _ in range(browser.queue.qsize())]

    messages = in_thread(lambda: asyncio.run(scenario()))  # beside Playwright's loop
    assert len(messages) <= 50 and messages[0] == {"kind": "overflow"}
    assert messages[-1] == {"kind": "evaluated", "n": 119}


def test_a_run_whose_process_died_is_stopped_not_running(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    Recorder(store).emit(SessionStarted(pid=999_999))
    (tmp_path / "run" / "live.json").write_text(json.dumps(
        {"host": "127.0.0.1", "port": 9, "token": "x", "pid": 999_999}))
    state = run_state(store, tmp_path / "run")
    store.close()
    assert state.status == "stopped" and "killed" in state.detail


TOKEN = "s3cret"


def token_client(catalog: RunCatalog, **options: object) -> TestClient:
    """A client of the UI on 127.0.0.1:8765 that carries its token (as a bearer header)."""
    return TestClient(create_app(catalog, token=TOKEN, **options),  # type: ignore[arg-type]
                      base_url="http://127.0.0.1:8765",
                      headers={"Authorization": f"Bearer {TOKEN}"})


def test_every_request_needs_the_token_even_on_loopback(stored_runs: Path, tmp_path: Path):
    """A candidate program on this machine reaches a loopback port as well as a browser does:
    no page, no data, no steering without the UI's token."""
    with pytest.raises(ValueError, match="needs --token"):
        check_bind("0.0.0.0", None)
    check_bind("127.0.0.1", None)
    catalog = RunCatalog([stored_runs], tmp_path / "cache")
    app = create_app(catalog, token=TOKEN)
    client = TestClient(app, base_url="http://127.0.0.1:8765", follow_redirects=False)
    for method, url, body in (("GET", "/", None), ("GET", "/api/runs", None),
                              ("GET", "/runs/counter-run", None),
                              ("GET", "/static/js/steer.js", None),
                              ("POST", "/api/runs/counter-run/control", {"action": "stop"}),
                              ("POST", "/api/runs/counter-run/guidance",
                               {"action": "append", "text": "x"})):
        answer = client.request(method, url, json=body)
        assert answer.status_code == 401 and "token" in answer.text, (method, url)
    assert client.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/?token=wrong").status_code == 401
    assert client.get("/", headers={"cookie": "cambrian_ui_token_8765=wrong"}).status_code == 401

    # The printed address: one visit sets the cookie and leaves the token out of the address.
    first = client.get("/runs/counter-run?token=s3cret&tab=1")
    assert first.status_code == 303 and first.headers["location"] == "/runs/counter-run?tab=1"
    cookie = first.headers["set-cookie"]
    assert cookie.startswith("cambrian_ui_token_8765=s3cret;"), cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert client.get("/api/runs").status_code == 200  # the cookie the visit set
    # Another UI on another port of the same host keeps its own cookie.
    other = TestClient(create_app(catalog, token="other"), base_url="http://127.0.0.1:8766")
    assert other.get("/", headers={"cookie": "cambrian_ui_token_8765=s3cret"}).status_code == 401

    writable = token_client(catalog)
    form = writable.post("/api/runs/counter-run/control", data={"action": "stop"})
    assert form.status_code == 403  # not JSON: a cross-site form cannot steer
    foreign = writable.post("/api/runs/counter-run/control", json={"action": "stop"},
                            headers={"origin": "http://evil.example:8765"})
    assert foreign.status_code == 403
    finished = writable.post("/api/runs/counter-run/control", json={"action": "stop"})
    assert finished.status_code == 409  # the run is not running


def test_a_server_started_without_a_token_makes_one(stored_runs: Path, tmp_path: Path):
    """`cambrian ui` on loopback, no --token: the server makes a random token, which the
    address to open carries; a request without it is refused."""
    from cambrian.ui.server import BackgroundServer, build_server

    servers = [BackgroundServer(build_server([stored_runs], port=0,
                                             cache_dir=tmp_path / "cache")).start()
               for _ in range(2)]
    try:
        first, second = servers
        assert first.token != second.token and len(first.token) >= 32
        assert first.url == f"{first.base}/?token={first.token}"
        assert httpx.get(first.base + "/api/runs", timeout=5).status_code == 401
        with httpx.Client(timeout=5, follow_redirects=True) as browser:
            opened = browser.get(first.url)
            assert opened.status_code == 200 and str(opened.url) == first.base + "/"
            assert browser.get(first.base + "/api/runs").json()[0]["key"] == "counter-run"
            # The same browser's cookie for this host opens no other UI on it.
            assert browser.get(second.base + "/api/runs").status_code == 401
    finally:
        for server in servers:
            server.stop()


def test_read_only_mode_has_no_steering_route(stored_runs: Path, tmp_path: Path):
    catalog = RunCatalog([stored_runs], tmp_path / "cache")
    reader = token_client(catalog, read_only=True)
    posts = [r for r in reader.app.routes if "POST" in getattr(r, "methods", set())]  # type: ignore[attr-defined]
    assert posts == []
    assert reader.post("/api/runs/counter-run/guidance",
                       json={"action": "append", "text": "x"}).status_code in (404, 405)
    assert 'id="steer"' not in reader.get("/runs/counter-run").text
    assert "read-only" in reader.get("/").text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def printed_address(log: Path, process: subprocess.Popen[bytes], timeout: float = 60) -> str:
    """The address `cambrian run --ui` printed (with its token)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        found = re.search(r"Watch and steer this run at (\S+)", log.read_text())
        if found:
            return found.group(1)
        time.sleep(0.1)
    raise AssertionError(f"no address printed: {log.read_text()[-2000:]}")


def test_cambrian_run_with_ui_serves_the_run_while_it_goes_on(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    port = free_port()
    with ScriptedLLM(incrementing, delay_s=0.4) as llm:
        overrides = [arg for s in scripted_sets(llm, 6) for arg in ("--set", s)]
        log = tmp_path / "run.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "cambrian", "run", str(task), "-o", str(tmp_path / "run"),
                 "-q", "--ui", "--ui-port", str(port), *overrides],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            address = printed_address(log, process)
            assert address.startswith(f"http://127.0.0.1:{port}/?token=")
            # Without the token, loopback or not, the run's UI answers nothing.
            assert httpx.get(f"http://127.0.0.1:{port}/api/runs", timeout=5).status_code == 401
            assert httpx.post(f"http://127.0.0.1:{port}/api/runs/run/control", timeout=5,
                              json={"action": "stop"}).status_code == 401
            with httpx.Client(timeout=5, follow_redirects=True) as browser:
                assert browser.get(address).status_code == 200  # one click: the cookie is set
                deadline, rows = time.monotonic() + 60, []
                while time.monotonic() < deadline and process.poll() is None:
                    try:
                        rows = browser.get(f"http://127.0.0.1:{port}/api/runs").json()
                    except httpx.HTTPError:
                        rows = []
                    if rows and rows[0]["status"] == "running":
                        break
                    time.sleep(0.2)
            assert rows and rows[0]["status"] == "running", rows
            assert process.wait(timeout=120) == 0  # without a terminal it exits with the run
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def test_the_overview_figures_agree_with_cambrian_status(stored_runs: Path):
    store = Store.open(stored_runs / "counter-run", read_only=True)
    try:
        status = run_status(store)
        ledger = read_ledger(store)
        panels = overview_panels(store, run_row(store, "counter-run", stored_runs, "cambrian",
                                                ledger), ledger)
    finally:
        store.close()
    assert [(m.model, m.calls, m.programs, m.evaluated, m.correct, m.improved)
            for m in panels.models] == [(m.model, m.calls, m.programs, m.evaluated, m.correct,
                                         m.improved) for m in status.models]
    assert panels.row.evaluations == status.generations
    assert panels.row.best_score == status.best_score
    assert dict(panels.by_status) == {str(k): v for k, v in status.by_status.items()}


def test_cambrian_ui_refuses_a_public_address_without_a_token(stored_runs: Path):
    from typer.testing import CliRunner

    from cambrian.cli import app

    result = CliRunner().invoke(app, ["ui", str(stored_runs), "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "needs --token" in result.output


def test_the_series_after_a_candidate_holds_only_the_newer_points(rich_runs: Path,
                                                                     tmp_path: Path):
    client = token_client(RunCatalog([rich_runs], tmp_path / "cache"))
    url = "/api/runs/harvest-run/series"
    whole = client.get(url).json()
    scores, bandit = whole["scores"], whole["bandit"]
    assert len(scores["id"]) > 5 and scores["cost_usd"][-1] > 0 and len(bandit["pulls"]) >= 2
    columns = ("id", "status", "score", "best", "seconds", "cost_usd", "tokens")
    for cut in (1, len(scores["id"]) // 2, len(scores["id"]) - 1):
        newer = client.get(url, params={"after": scores["id"][cut - 1]}).json()["scores"]
        assert {c: newer[c] for c in columns} == {c: scores[c][cut:] for c in columns}
    latest = client.get(url, params={"after": scores["id"][-1],
                                     "bandit_after": bandit["last_event"]}).json()
    assert latest["scores"]["id"] == [] and latest["bandit"]["pulls"] == []
    assert latest["bandit"]["last_event"] == bandit["last_event"]
    first_only = client.get(url, params={"bandit_after": 0}).json()["bandit"]
    assert first_only == bandit
    store = Store.open(rich_runs / "harvest-run", read_only=True)
    refused = store.candidates.list("rejected")[0].id
    store.close()
    assert client.get(url, params={"after": refused}).status_code == 404  # never evaluated


def test_the_summary_fragment_reads_the_run_row_only(stored_runs: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch):
    import cambrian.ui.app as app_module

    def overview_panels(*args: object) -> None:
        raise AssertionError("the summary fragment built the overview panels")

    monkeypatch.setattr(app_module, "overview_panels", overview_panels)
    client = token_client(RunCatalog([stored_runs], tmp_path / "cache"))
    summary = client.get("/runs/counter-run/panels", params={"part": "summary"})
    assert summary.status_code == 200 and 'id="best-score"' in summary.text
    store = Store.open(stored_runs / "counter-run", read_only=True)
    row = run_row(store, "counter-run", stored_runs / "counter-run", "cambrian", read_ledger(store))
    store.close()
    assert f">{row.best_score:.6g}<" in summary.text and 'id="paused"' not in summary.text


def test_a_changed_trace_replaces_its_cached_import(tmp_path: Path):
    traces = tmp_path / "traces"
    shinka = make_shinka_results(traces / "shinka_results")
    make_openevolve_output(traces / "openevolve_output")
    cache = tmp_path / "cache"
    catalog = RunCatalog([traces], cache)
    refs = {ref.key: ref for ref in catalog.refresh()}
    first = catalog.store_dir(refs["shinka_results"])
    other = catalog.store_dir(refs["openevolve_output"])
    assert catalog.store_dir(refs["shinka_results"]) == first  # unchanged: imported once

    add_shinka_program(shinka, shinka_child("better-uuid", 2, "child-uuid", 0.9))
    later = time.time() + 5  # a new modification time even on a coarse clock
    os.utime(shinka / "programs.sqlite", (later, later))
    second = catalog.store_dir(refs["shinka_results"])
    assert second != first and not first.exists()
    assert sorted(p.name for p in cache.iterdir()) == sorted([second.name, other.name])
    store = catalog.open(refs["shinka_results"])
    try:
        assert store.candidates.count() == 3
    finally:
        store.close()
    assert sorted(p.name for p in shinka.iterdir()) == ["programs.sqlite"]
