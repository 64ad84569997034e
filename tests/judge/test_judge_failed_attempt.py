"""A child that fails (compile error, runtime error...) is never a parent, yet its message must
reach the next prompts that mutate the same parent: "your previous attempt from this program
failed: <verdict>: <message>". Runs use the real engine, g++, subprocess evaluators and the
scripted LLM; the helper's rules are checked on a real SQLite store."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, counter_reply, current_value, write_counter_task
from support.store_queries import add_candidate, sql

from cambrian.api import start
from cambrian.core.evaluation import EvaluationResult
from cambrian.search.requests import FAILED_ATTEMPT_CHARS, failed_attempt_note
from cambrian.store.store import STORE_FILENAME, Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "heuristic_contest"
PRIORITY_LINE = "return (double)value / steps_there;"
# Passes `g++ -fsyntax-only` (the proposer's check) but fails to link: a compile error (CE)
# that only the judge's real compilation finds.
UNDEFINED_HELPER = ("double route_bonus(int tree);\n"
                    "    return value / (double)steps_there * route_bonus(value);")
LINK_ERROR = "undefined reference to `route_bonus(int)'"
NOTE_HEAD = "Your previous attempt from this program failed"

Responder = Callable[[list[dict[str, str]], int], str]


def wait_until_evaluated(run_dir: Path, candidate_id: int, timeout_s: float = 120.0) -> None:
    """Block (in the scripted LLM's thread) until the candidate's evaluation is committed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(run_dir / STORE_FILENAME) as connection:
                row = connection.execute("SELECT status FROM candidates WHERE id=?",
                                         (candidate_id,)).fetchone()
        except sqlite3.OperationalError:
            row = None
        if row is not None and row[0] != "pending":
            return
        time.sleep(0.05)
    raise AssertionError(f"candidate {candidate_id} was not evaluated within {timeout_s} s")


def failing_first(run_dir: Path, failing: str, later: Callable[[list[dict[str, str]], int], str]
                  ) -> Responder:
    """Call 0 proposes the failing child (candidate 2). Call 1 is answered only once candidate 2
    is committed, so the prompt of call 2 -- built after that -- is the first one that can
    (and must) carry the failure note; with one program correct, its parent is candidate 1."""
    def reply(messages: list[dict[str, str]], index: int) -> str:
        if index == 0:
            return failing
        if index == 1:
            wait_until_evaluated(run_dir, 2)
        return later(messages, index)
    return reply


def run(task: Path, run_dir: Path, responder: Responder, *sets: str) -> list[str]:
    """Run three generations; return the stored mutation prompts (user messages) in call order."""
    with ScriptedLLM(responder) as llm:
        evolution = start(task, run_dir=run_dir, overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=3",
            "evolution.patch_types=[diff]", "evolution.patch_type_probs=[1.0]",
            "novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
            "mutation.schedule=off", *sets])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    store = Store.open(run_dir)
    try:
        rows = sql(store, "SELECT messages_json FROM contexts WHERE purpose='mutation' "
                             "ORDER BY id").fetchall()
    finally:
        store.close()
    return [next(m["content"] for m in json.loads(r[0]) if m["role"] == "user") for r in rows]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_compile_error_reaches_the_next_prompt_on_the_same_parent(tmp_path: Path):
    run_dir = tmp_path / "run"
    failing = ("Weigh trees by a bonus\n<<<<<<< SEARCH\n"
               f"    {PRIORITY_LINE}\n=======\n    {UNDEFINED_HELPER}\n"
               ">>>>>>> REPLACE\n")

    def tweak(messages: list[dict[str, str]], index: int) -> str:
        divisor = ["(steps_there + 0.5 * steps_back)", "(steps_there * steps_there)"][index % 2]
        return ("Weigh the way back\n<<<<<<< SEARCH\n"
                f"    {PRIORITY_LINE}\n=======\n"
                f"    return value / {divisor};\n"
                ">>>>>>> REPLACE\n")

    prompts = run(EXAMPLE, run_dir, failing_first(run_dir, failing, tweak),
                  "judge.public_seeds=[0,3]", "judge.tiers=null")

    store = Store.open(run_dir)
    try:
        failed = store.candidates.get(2)
        assert failed.status == "incorrect"
        assert store.evaluations.latest(2).extra["verdict"] == "CE"  # judged, not a patch failure
        third = sql(store, "SELECT id FROM candidates WHERE generation=3").fetchone()[0]
        assert store.candidates.get(third).parent_id == 1
        assert store.candidates.get(third).notes["failed_attempt"] == 2
    finally:
        store.close()
    assert len(prompts) == 3
    assert NOTE_HEAD not in prompts[0] and LINK_ERROR not in prompts[0]
    assert f"{NOTE_HEAD}: compile error:" in prompts[2]
    assert LINK_ERROR in prompts[2]
    assert "g++ -std=c++17" not in prompts[2]  # the command line is dropped, the message kept


def test_runtime_error_of_a_python_child_reaches_the_next_prompt(tmp_path: Path):
    run_dir = tmp_path / "run"
    failing = ('Read the value from text\n<<<<<<< SEARCH\nVALUE = 1\n=======\n'
               'VALUE = int("one hundred")\n>>>>>>> REPLACE\n')

    def increment(messages: list[dict[str, str]], index: int) -> str:
        return counter_reply(current_value(messages), index, wants_diff=True)

    prompts = run(write_counter_task(tmp_path / "task"), run_dir,
                  failing_first(run_dir, failing, increment))

    assert len(prompts) == 3
    assert NOTE_HEAD not in prompts[0]
    assert NOTE_HEAD in prompts[2]
    assert "invalid literal for int() with base 10: 'one hundred'" in prompts[2]


# ----------------------------------------------------------------------------- the rules


@pytest.fixture
def store(tmp_path: Path):
    created = Store.open(tmp_path, create=True)
    created.runs.create(run_id="notes", task_name="t", task_dir=str(tmp_path),
                       direction="maximize", language="python", config={}, seed=0,
                       code_version="test")
    add_candidate(created, generation=0, island=0, parent_id=None, operator="init",
                          status="correct", language="python", source="x = 1\n")
    yield created
    created.close()


def child(store: Store, status: str, result: EvaluationResult) -> int:
    with store.transaction():
        candidate = add_candidate(store, generation=1, island=0, parent_id=1, operator="diff",
                                        status="pending", language="python",
                                        source=f"x = {store.candidates.count() + 1}\n")
        store.evaluations.add(candidate, result)
        store.candidates.update(candidate, status=status, score=result.combined_score)
    return candidate


def test_note_follows_the_latest_evaluated_child_and_stays_bounded(store: Store):
    assert failed_attempt_note(store, 1) == ((), {})
    traceback = "Traceback (most recent call last):\n" + "  frame\n" * 5000 + "ZeroDivisionError"
    crashed = child(store, "incorrect", EvaluationResult(status="crashed", error=traceback))
    notes, tags = failed_attempt_note(store, 1)
    assert tags == {"failed_attempt": crashed}
    assert notes[0].startswith(f"{NOTE_HEAD}: runtime error:\nTraceback")
    assert notes[0].endswith("ZeroDivisionError")  # the tail, where the cause is, survives
    assert len(notes[0]) < FAILED_ATTEMPT_CHARS + 100

    # Judged case failures name their verdicts.
    judged = EvaluationResult(status="incorrect", error="1 public case(s) failed; first: seed-3 "
                              "TLE (time limit exceeded): used more than 1 s of CPU time",
                              extra={"verdicts": {"AC": 1, "TLE": 1}})
    timed_out = child(store, "incorrect", judged)
    notes, tags = failed_attempt_note(store, 1)
    assert tags == {"failed_attempt": timed_out}
    assert notes[0].startswith(f"{NOTE_HEAD}: time limit exceeded on 1 case:\n1 public case")

    # A later child that ran (correct, or screened at a quick stage) clears the note.
    child(store, "correct", EvaluationResult(status="ok", combined_score=2.0))
    assert failed_attempt_note(store, 1) == ((), {})
    child(store, "incorrect", EvaluationResult(status="timeout", error="killed after 5 s"))
    assert failed_attempt_note(store, 1)[0][0].startswith(f"{NOTE_HEAD}: time limit exceeded:")
    child(store, "screened", EvaluationResult(status="ok", extra={"screened": True}))
    assert failed_attempt_note(store, 1) == ((), {})
    # Other parents' children say nothing about this one.
    assert failed_attempt_note(store, 2) == ((), {})
