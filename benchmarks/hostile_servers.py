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
from support.scripted_llm import write_counter_task


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
