"""Hostile model servers for benchmarks/hostile.py: a local HTTP server speaking the OpenAI
protocol misbehaves (garbage, errors, slowness, nothing listening); the run must stop as
documented, with one line and the right exit code, never a traceback."""

from __future__ import annotations

import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from hostile_runner import cambrian, clean, settings
from support.misbehaving_server import MisbehavingServer, send
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.store.store import Store


def server_case(answer: Callable[[BaseHTTPRequestHandler, int], None], exit_code: int,
                phrase: str) -> Callable[[Path], tuple[bool, str]]:
    def run(work: Path) -> tuple[bool, str]:
        server = MisbehavingServer(answer)
        task = write_counter_task(work / "task")
        began = time.monotonic()
        try:
            result = cambrian("run", str(task), "-o", str(work / "run"), "-g", "3",
                              *settings(server.model, "llm.retries.max_attempts=2",
                                        "llm.retries.initial_backoff_s=0"))
        finally:
            server.server.shutdown()
        took = time.monotonic() - began
        text = result.stdout + result.stderr
        ok = result.returncode == exit_code and clean(result) and phrase in text
        return ok, (f"exit {result.returncode} in {took:.0f} s after {server.calls} calls; "
                    f"'{phrase}' {'shown' if phrase in text else 'missing'}")

    return run


def garbage_json(handler: BaseHTTPRequestHandler, call: int) -> None:
    send(handler, 200, b'{"choices": [ not json')


def always_500(handler: BaseHTTPRequestHandler, call: int) -> None:
    send(handler, 500, b'{"error": {"message": "overloaded"}}')


def always_401(handler: BaseHTTPRequestHandler, call: int) -> None:
    send(handler, 401, b'{"error": {"message": "bad key", "type": "invalid_request_error"}}')


def too_slow(handler: BaseHTTPRequestHandler, call: int) -> None:
    time.sleep(6)
    try:
        send(handler, 200, b"{}")
    except BrokenPipeError:
        pass  # the client gave up, as it should


def server_down(work: Path) -> tuple[bool, str]:
    task = write_counter_task(work / "task")
    began = time.monotonic()
    result = cambrian("run", str(task), "-o", str(work / "run"), "-g", "3", *settings(
        {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}))
    took = time.monotonic() - began
    ok = result.returncode == 5 and clean(result) and "nothing answers" in result.stderr
    return ok, f"exit {result.returncode} in {took:.1f} s, before any LLM call"


def _scripted_run(work: Path, status_for: Callable[[int], int], *more: str
                  ) -> tuple[bool, str, list[str], int]:
    """A run against a scripted server answering ``status_for(call)`` (its HTTP status):
    whether it ended without a traceback, exit 0 and one ledger row per request; a summary;
    the ledger's errors; the requests the server got."""
    task = write_counter_task(work / "task")
    with ScriptedLLM(incrementing, status_for=status_for) as llm:
        result = cambrian("run", str(task), "-o", str(work / "run"), "-g", "3",
                          *settings(llm.model_config(), *more))
        requests = len(llm.requests)
    with Store.open(work / "run") as store:
        rows = store.contexts.list()
    errors = [row.error or "" for row in rows if row.error]
    summary = (f"exit {result.returncode} after {requests} requests; {len(rows)} ledger rows, "
               f"{len(errors)} with an error")
    ok = clean(result) and result.returncode == 0 and len(rows) == requests
    return ok, summary, errors, requests


def one_refusal(work: Path) -> tuple[bool, str]:
    """The server refuses the first request (HTTP 400) and answers the rest: that proposal
    fails, the run goes on to its budget (exit 0), and the refusal is in the ledger."""
    ok, summary, errors, _ = _scripted_run(work, lambda call: 400 if call == 0 else 200)
    ok = ok and len(errors) == 1 and "HTTP 400" in errors[0]
    return ok, summary


def retried_then_answered(work: Path) -> tuple[bool, str]:
    """Two 500s, then answers: the call is retried, and each request is a ledger row."""
    ok, summary, errors, _ = _scripted_run(
        work, lambda call: 500 if call < 2 else 200, "llm.retries.initial_backoff_s=0")
    ok = ok and len(errors) == 2 and all("retried" in error for error in errors)
    return ok, summary
