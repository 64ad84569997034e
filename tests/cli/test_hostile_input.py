"""Containment, round two: what a candidate returns, a file a user points at, or a model server
answers never ends in a traceback or a dead run; the ledger counts every request; what `show`
prints cannot drive the terminal; a run whose evaluations all fail because of the environment
says so and stops early. Real `cambrian` processes, real HTTP servers speaking the OpenAI
protocol, real sandboxed evaluations."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from support.misbehaving_server import MisbehavingServer, send
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task

from cambrian.core.outcomes import RunOutcome
from cambrian.store.store import Store

CLI = [sys.executable, "-m", "cambrian"]
QUIET = ["novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
         "evolution.patch_types=[full]", "evolution.patch_type_probs=[1.0]",
         "mutation.schedule=off"]


def cambrian(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
             timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=cwd)


def sets(model: dict, *more: str) -> list[str]:
    flat = ["--set", "llm.models=[" + json.dumps(model) + "]"]
    for item in (*QUIET, *more):
        flat += ["--set", item]
    return flat


def one_line_error(result: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-3000:]
    assert result.returncode == code, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


HUGE_SCORE_EVALUATOR = """import os, runpy, time


def evaluate(program_path):
    value = runpy.run_path(program_path)["run"]()
    if value < 2:
        return {"combined_score": float(value)}
    time.sleep(float(os.environ.get("HOLD_S", "0")))
    return {"combined_score": 10**400, "public": {"nested": {"count": -10**400}}}
"""


def test_a_score_of_10_to_the_400_fails_its_candidate_and_the_run_goes_on(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    (task / "evaluate.py").write_text(HUGE_SCORE_EVALUATOR)
    with ScriptedLLM(incrementing) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3",
                          *sets(llm.model_config()))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    with Store.open(tmp_path / "run") as store:
        children = [row for row in store.candidates.list() if row.id > 1]
        assert children and all(row.status == "incorrect" for row in children)
        error = store.evaluations.latest(children[0].id).error
    assert "integer of about 401 digits (too large for a float), not a finite number" in error


def test_a_run_poisoned_by_a_huge_score_resumes(tmp_path: Path):
    """A run stopped while its children (which return 10**400) were pending: the resume
    evaluates them, each a failed candidate with its reason (once, every resume died)."""
    task = write_counter_task(tmp_path / "task")
    (task / "evaluate.py").write_text(HUGE_SCORE_EVALUATOR)
    run_dir = tmp_path / "run"
    with ScriptedLLM(incrementing) as llm:
        first = subprocess.Popen(
            [*CLI, "run", str(task), "-o", str(run_dir), "-g", "3", *sets(
                llm.model_config(), 'evaluation.env={"HOLD_S": "60"}',
                "evaluation.timeout_s=120")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (run_dir / "work" / "2").exists():
            time.sleep(0.2)
        assert (run_dir / "work" / "2").exists(), "the child never started its evaluation"
        time.sleep(1)
        first.send_signal(signal.SIGTERM)
        _, stderr = first.communicate(timeout=60)
        assert first.returncode == RunOutcome.INTERRUPTED.exit_code, stderr
        with Store.open(run_dir) as store:
            assert store.candidates.get(2).status == "pending"
        resumed = cambrian("resume", str(run_dir),
                           *sets(llm.model_config(), 'evaluation.env={"HOLD_S": "0"}'))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Traceback" not in resumed.stderr
    with Store.open(run_dir) as store:
        evaluation = store.evaluations.latest(2)
    assert evaluation is not None and evaluation.status == "incorrect"
    assert "too large for a float" in evaluation.error


def test_unreadable_inputs_are_one_line_errors(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    model = {"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    config = tmp_path / "latin1.yaml"
    config.write_bytes("evolution:\n  generations: 3  # café\n".encode("latin-1"))
    one_line_error(cambrian("run", str(task), "-c", str(config), "-o", str(tmp_path / "a"),
                            *sets(model)), 2, "latin1.yaml is not UTF-8 text")
    binary = write_counter_task(tmp_path / "binary")
    (binary / "evaluate.py").write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe binary")
    one_line_error(cambrian("run", str(binary), "-o", str(tmp_path / "b"), *sets(model)), 2,
                   "evaluate.py (the evaluator) is not a UTF-8 text file")
    a_file = tmp_path / "a_file"
    a_file.write_text("keep")
    for run_dir in (a_file / "run", a_file):
        one_line_error(cambrian("run", str(task), "-o", str(run_dir), *sets(model)), 2,
                       f"the run folder {run_dir} cannot be made: {a_file} is a file")
    assert a_file.read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a_file", "binary", "latin1.yaml", "task"]


def test_a_preflight_failure_leaves_no_runs_folder_behind(tmp_path: Path):
    """Without --run-dir the run goes to runs/NAME-TIME: a preflight failure removes runs/ too
    when the run made it, and keeps a runs/ that was there."""
    task = write_counter_task(tmp_path / "task", limit=0)  # the initial program fails
    work = tmp_path / "work"
    work.mkdir()
    with ScriptedLLM(incrementing) as llm:
        result = cambrian("run", str(task), *sets(llm.model_config()), cwd=work)
        assert result.returncode == RunOutcome.NOTHING_EVALUATED.exit_code, result.stderr
        assert list(work.iterdir()) == []
        (work / "runs").mkdir()
        again = cambrian("run", str(task), *sets(llm.model_config()), cwd=work)
    assert again.returncode == RunOutcome.NOTHING_EVALUATED.exit_code, again.stderr
    assert [p.name for p in work.iterdir()] == ["runs"] and list((work / "runs").iterdir()) == []


def test_a_key_variable_that_is_not_set_is_said_once(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    env = {k: v for k, v in os.environ.items() if k != "CAMBRIAN_TEST_UNSET_KEY"}
    with ScriptedLLM(incrementing) as llm:
        result = subprocess.run(
            [*CLI, "run", str(task), "-o", str(tmp_path / "run"), "-g", "2",
             *sets({**llm.model_config(), "api_key_env": "CAMBRIAN_TEST_UNSET_KEY"})],
            capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stderr
    warning = ("model 'scripted' has no API key: api_key_env names CAMBRIAN_TEST_UNSET_KEY, "
               "which is not set")
    assert result.stderr.count(warning) == 1, result.stderr


def test_one_http_400_fails_one_proposal_and_the_run_goes_on(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing, status_for=lambda index: 400 if index == 0 else 200) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3",
                          *sets(llm.model_config()))
    assert result.returncode == 0, result.stderr
    with Store.open(tmp_path / "run") as store:
        errors = [c.error for c in store.contexts.list() if c.error]
        assert len(errors) == 1 and "HTTP 400" in errors[0]
        assert store.candidates.count("correct") == 4
    status = cambrian("status", str(tmp_path / "run"))
    assert "LLM call failed" in status.stdout


def test_a_server_refusing_every_request_stops_the_run_with_exit_5(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing, status_for=lambda index: 400) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3",
                          *sets(llm.model_config()))
    assert result.returncode == RunOutcome.LLM_UNREACHABLE.exit_code == 5, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "HTTP 400: scripted status 400" in result.stdout + result.stderr


def test_every_request_the_server_was_sent_is_a_ledger_row(tmp_path: Path):
    """Attempts that failed and were retried are rows too: as many rows as requests."""
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing, status_for=lambda index: 500 if index in (0, 1, 4) else 200
                     ) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "3", *sets(
            llm.model_config(), "llm.retries.initial_backoff_s=0",
            "llm.retries.max_backoff_s=0"))
        requests = len(llm.requests)
    assert result.returncode == 0, result.stderr
    with Store.open(tmp_path / "run") as store:
        rows = store.contexts.list()
    assert len(rows) == requests == 6
    retried = [row.error for row in rows if row.error]
    assert len(retried) == 3 and all("HTTP 500" in e and "retried" in e for e in retried)
    assert "(attempt 1 of 4; retried)" in retried[0] and "(attempt 2 of 4; retried)" in retried[1]


ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\x9b1m"


def test_show_neutralises_a_candidates_terminal_escapes(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    program = f"print({ESCAPES!r})\nVALUE = 2  # {ESCAPES}"

    def reply(messages: list[dict[str, str]], index: int) -> str:
        if index == 0:
            return f"Colours {ESCAPES}\n```python\n{program}\n```\n"
        return incrementing(messages, index)

    with ScriptedLLM(reply) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "2",
                          *sets(llm.model_config()))
    assert result.returncode == 0, result.stderr
    with Store.open(tmp_path / "run") as store:
        assert ESCAPES in (store.candidates.get(2).source or "")  # stored as the model sent it
        assert ESCAPES in store.evaluations.latest(2).stdout
    shown = cambrian("show", str(tmp_path / "run"), "2")
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
    assert "\x9b" not in shown.stdout
    assert "␛]0;pwned␇␛[2J" in shown.stdout  # visible, not obeyed
    status = cambrian("status", str(tmp_path / "run"))
    assert "\x1b" not in status.stdout


def cut_reply(handler: BaseHTTPRequestHandler, call: int) -> None:
    """A reply the server stopped at its length after 50 tokens: an unclosed code block."""
    body = {"id": f"c{call}", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "length",
                         "message": {"role": "assistant", "content": "```python\nVALUE = "}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}
    send(handler, 200, json.dumps(body).encode())


def test_a_cut_reply_names_the_limit_the_request_set(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    server = MisbehavingServer(cut_reply)
    try:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "1", *sets(
            {**server.model, "max_tokens": 1024}, "evolution.max_patch_attempts=1",
            "evolution.max_patch_resamples=1"))
    finally:
        server.server.shutdown()
    assert "Traceback" not in result.stderr
    with Store.open(tmp_path / "run") as store:
        errors = [row.error for row in store.candidates.list("patch_failed")]
    assert errors, result.stderr
    assert all("reply was cut off after 50 tokens, under the 1024-token limit asked for" in e
               for e in errors), errors
    assert not any("50-token limit" in e for e in errors)


MISSING_TOOL_EVALUATOR = """import subprocess


def evaluate(program_path):
    try:
        subprocess.run(["cambrian-no-such-compiler", program_path], check=True)
    except OSError as exc:  # caught: the program scores 0, as a task of this shape did
        print("build failed:", exc)
        return {"combined_score": 0.0}
    return {"combined_score": 1.0}
"""


def test_evaluations_all_failing_for_a_missing_command_stop_the_run_early(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    (task / "evaluate.py").write_text(MISSING_TOOL_EVALUATOR)
    with ScriptedLLM(incrementing) as llm:
        result = cambrian("run", str(task), "-o", str(tmp_path / "run"), "-g", "30",
                          *sets(llm.model_config()))
        calls = len(llm.requests)
    assert result.returncode == RunOutcome.NOTHING_EVALUATED.exit_code == 4, result.stderr
    assert "Traceback" not in result.stderr
    found = "because of the evaluation environment: command not found: cambrian-no-such-compiler"
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and all(found in line for line in warnings), result.stderr
    assert "the run's first evaluation failed" in warnings[0]
    assert "error: run stopped: the first 5 evaluations all failed the same way" in result.stderr
    assert calls < 10
    with Store.open(tmp_path / "run") as store:
        assert store.evaluations.count() == 5
