"""A run that cannot work says why at once, in one line, with a distinct exit code; nothing
that goes wrong is silent. Real `cambrian` processes, real HTTP servers speaking the OpenAI
protocol (scripted, or sending garbage), real sandboxed evaluations."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from support.misbehaving_server import MisbehavingServer, send
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.core.outcomes import RunOutcome
from cambrian.store.store import Store

CLI = [sys.executable, "-m", "cambrian"]
QUIET = ["novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false"]


def cambrian(*args: str, env: dict[str, str] | None = None,
             timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def sets(model: dict, *more: str) -> list[str]:
    flat = ["--set", "llm.models=[" + json.dumps(model) + "]"]
    for item in (*QUIET, *more):
        flat += ["--set", item]
    return flat


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-3000:]


def test_a_failing_initial_program_is_reported_before_any_llm_call(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", limit=0)  # VALUE = 1 exceeds the limit
    with ScriptedLLM(incrementing) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3",
                          *sets(llm.model_config()))
    assert result.returncode == RunOutcome.NOTHING_EVALUATED.exit_code == 4
    assert "initial program does not pass" in result.stderr
    assert "VALUE 1 exceeds the limit 0" in result.stderr
    assert llm.requests == []
    no_traceback(result)


def test_a_preflight_failure_removes_only_what_the_run_wrote(tmp_path: Path):
    """A run stopped by its preflight leaves no run behind; in a folder that existed, what was
    there before stays."""
    task = write_counter_task(tmp_path / "task", limit=0)
    made = tmp_path / "made"
    given = tmp_path / "given"
    (given / "notes").mkdir(parents=True)
    (given / "precious.txt").write_text("keep me")
    with ScriptedLLM(incrementing) as llm:
        for run_dir in (made, given):
            result = cambrian("run", str(task), "-o", str(run_dir), "-g", "3",
                              *sets(llm.model_config()))
            assert result.returncode == 4, result.stderr
    assert not made.exists()
    assert sorted(p.name for p in given.iterdir()) == ["notes", "precious.txt"]
    assert (given / "precious.txt").read_text() == "keep me"


def test_a_syntax_error_outside_the_block_stops_the_run_at_once(tmp_path: Path):
    broken = "# EVOLVE-BLOCK-START\nVALUE = 1\n# EVOLVE-BLOCK-END\n\ndef run(:\n    return VALUE\n"
    task = write_counter_task(tmp_path / "task", initial=broken)
    with ScriptedLLM(incrementing) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3",
                          *sets(llm.model_config()))
    assert result.returncode == 4 and "does not parse as python" in result.stderr
    assert llm.requests == []
    no_traceback(result)


def test_missing_markers_are_announced(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", initial="VALUE = 1\n\n\ndef run():\n"
                                                         "    return VALUE\n")
    with ScriptedLLM(incrementing) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "1",
                          *sets(llm.model_config()))
    assert result.returncode == 0, result.stderr
    assert "no EVOLVE-BLOCK-START/END markers: the whole file may change" in result.stderr


def test_an_unreachable_model_server_is_reported_in_seconds(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    model = {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    began = time.monotonic()
    result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3", *sets(model))
    assert time.monotonic() - began < 60
    assert result.returncode == RunOutcome.LLM_UNREACHABLE.exit_code == 5
    assert "nothing answers at 127.0.0.1:9" in result.stderr
    no_traceback(result)


def test_a_server_that_accepts_but_never_answers_is_reported_at_preflight(tmp_path: Path):
    """A hung server (the port accepts, nothing ever answers) fails the preflight in seconds,
    not after a model call's whole timeout."""
    task = write_counter_task(tmp_path / "task")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections queue up in the kernel; nobody reads or answers them
    port = silent.getsockname()[1]
    model = {"provider": "openai", "model": "m", "base_url": f"http://127.0.0.1:{port}/v1",
             "timeout_s": 600}
    began = time.monotonic()
    try:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3", *sets(model))
    finally:
        silent.close()
    assert time.monotonic() - began < 60
    assert result.returncode == RunOutcome.LLM_UNREACHABLE.exit_code
    assert "sent no HTTP answer within 10 s" in result.stderr
    assert not (tmp_path / "run").exists()
    no_traceback(result)


def garbage_body(handler: BaseHTTPRequestHandler, call: int) -> None:
    """Speaks HTTP like an OpenAI-compatible server, but with a body that is not JSON."""
    send(handler, 200, b'{"id": "x", "choices": [ this is not json')


def test_a_malformed_body_is_retried_then_reported_in_one_line(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    server = MisbehavingServer(garbage_body)
    model = {"provider": "openai", "model": "m", "base_url": server.base_url}
    try:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3", *sets(
            model, "llm.retries.max_attempts=2", "llm.retries.initial_backoff_s=0"))
    finally:
        server.server.shutdown()
    no_traceback(result)
    assert result.returncode == RunOutcome.LLM_UNREACHABLE.exit_code, result.stderr
    assert server.calls >= 2  # retried
    store = Store.open(tmp_path / "run")
    errors = [c.error for c in store.contexts.list()]
    store.close()
    assert len(errors) == server.calls  # each request a ledger row, retried ones too
    assert all("LLMMalformedReply" in e for e in errors)
    given_up = [e for e in errors if "gave up after 2 attempts" in e]
    retried = [e for e in errors if "(attempt 1 of 2; retried)" in e]
    assert given_up and len(given_up) == len(retried) == len(errors) // 2
    status = cambrian("status", str(tmp_path / "run"))
    assert "LLM call failed" in status.stdout and "LLMMalformedReply" in status.stdout


def test_huge_replies_are_stored_capped_with_the_cut_recorded(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    huge = "x" * 20_000_000

    with ScriptedLLM(lambda messages, index: huge) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "1", *sets(
            llm.model_config(), "llm.max_reply_chars=10000",
            "evolution.max_patch_attempts=1", "evolution.max_patch_resamples=2"))
    assert result.returncode != 0  # no reply was usable
    store = Store.open(tmp_path / "run")
    contexts = store.contexts.list("mutation")
    assert contexts and all(len(c.response_text or "") == 10_000 for c in contexts)
    assert all(c.response_dropped_chars == 20_000_000 - 10_000 for c in contexts)
    store.close()
    assert (tmp_path / "run" / "run.sqlite").stat().st_size < 2_000_000


def test_budget_and_stall_exit_codes(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        capped = cambrian("run", str(task), "-o", str(tmp_path / "capped"), "-g", "10",
                          *sets(llm.model_config(), "budget.max_llm_calls=2"))
    assert capped.returncode == RunOutcome.BUDGET_REACHED.exit_code == 3, capped.stderr
    assert "LLM call budget reached" in capped.stdout
    with ScriptedLLM(lambda messages, index: "I would rather not.") as llm:
        useless = cambrian("run", str(task), "-o", str(tmp_path / "useless"), "-g", "5",
                           *sets(llm.model_config()))
    assert useless.returncode == RunOutcome.NOTHING_EVALUATED.exit_code, useless.stderr
    assert "produced no usable program" in useless.stdout
    status = cambrian("status", str(tmp_path / "useless"))
    assert "reply refused" in status.stdout and "failures by reason" in status.stdout


def test_an_early_failure_leaves_no_run_folder(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    with ScriptedLLM(incrementing) as llm:
        wrong = cambrian("run", str(task), "-o", str(run_dir), "--search", "shinkka",
                         *sets(llm.model_config()))
        assert wrong.returncode == 2 and "did you mean 'shinka'" in wrong.stderr
        assert not run_dir.exists()
        keyless = cambrian("run", str(task), "-o", str(run_dir), *sets(
            {"provider": "anthropic", "model": "claude-sonnet-4-5", "api_key_env": "NO_SUCH_KEY"}),
            env={"NO_SUCH_KEY": ""})
        assert keyless.returncode == 2 and "NO_SUCH_KEY" in keyless.stderr
        assert not run_dir.exists()
        fine = cambrian("run", str(task), "-o", str(run_dir), "-g", "1", *sets(llm.model_config()))
    assert fine.returncode == 0, fine.stderr


def test_a_damaged_store_gives_one_line(tmp_path: Path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.sqlite").write_bytes(b"garbage" * 1000)
    for command in (["status"], ["resume"], ["best"], ["show", "--", "1"]):
        args = [command[0], str(tmp_path / "run"), *command[1:]]
        result = cambrian(*[a for a in args if a != "--"])
        assert result.returncode == 2, (command, result.stderr)
        message = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(message) == 1 and "damaged or not an SQLite database" in message[0]


def test_show_prints_code_diff_prompt_reply_and_output(tmp_path: Path):
    task = write_counter_task(tmp_path / "task", limit=3)
    with ScriptedLLM(incrementing) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3",
                          *sets(llm.model_config(), "evolution.patch_types=[diff]",
                                "evolution.patch_type_probs=[1.0]"))
    assert result.returncode == 0, result.stderr
    store = Store.open(tmp_path / "run")
    failed = next(r for r in store.candidates.list("incorrect"))
    store.close()
    shown = cambrian("show", str(tmp_path / "run"), str(failed.id))
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert f"Candidate {failed.id}" in out and "status incorrect" in out
    assert "diff to its parent" in out and "+VALUE =" in out
    assert "prompt: user" in out and "## Current program" in out
    assert "reply (" in out and "<<<<<<< SEARCH" in out
    assert "exceeds the limit 3" in out


SECRET = "sk-run-secret-0123456789abcdef"
LEAKY_EVALUATOR = """import os, runpy


def evaluate(program_path):
    value = runpy.run_path(program_path)["run"]()
    seen = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()))
    return {"combined_score": float(value), "text_feedback": "env: " + seen}
"""


def test_a_custom_named_key_reaches_no_candidate_prompt_or_store(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    (task / "evaluate.py").write_text(LEAKY_EVALUATOR)  # shows its whole environment
    echo_key = f"Try {SECRET}\n```python\nVALUE = 2\n```\n"  # a model that echoes the key

    def reply(messages, index):
        return echo_key if index == 0 else incrementing(messages, index)

    with ScriptedLLM(reply) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3", *sets(
            {**llm.model_config(), "api_key_env": "LLM_KEY"}), env={"LLM_KEY": SECRET})
        prompts = json.dumps(llm.requests)
    assert result.returncode == 0, result.stderr
    assert SECRET not in prompts
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    store = Store.open(tmp_path / "run")
    feedback = store.evaluations.latest(1).text_feedback
    assert "PATH=" in feedback and "LLM_KEY" not in feedback  # the evaluator's own environment
    store.close()


def test_a_task_file_rewritten_during_the_run_stops_it(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")

    def reply(messages, index):
        if index == 1:  # as if something rewrote the evaluator while the run goes on
            (task / "evaluate.py").write_text("def evaluate(p):\n    return {'combined_score': 1e9}\n")
        return incrementing(messages, index)

    with ScriptedLLM(reply) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "5",
                          *sets(llm.model_config()))
    assert result.returncode == RunOutcome.TASK_CHANGED.exit_code == 7, result.stderr
    assert "evaluate.py changed since the evaluator was built" in result.stderr
    no_traceback(result)
    store = Store.open(tmp_path / "run")
    assert all((r.score or 0) < 1e9 for r in store.candidates.list())
    store.close()


@pytest.mark.parametrize("command", ["status", "show"])
def test_missing_runs_are_one_line_errors(tmp_path: Path, command: str):
    args = [command, str(tmp_path / "nothing")] + (["1"] if command == "show" else [])
    result = cambrian(*args)
    assert result.returncode == 2 and "no run store" in result.stderr
