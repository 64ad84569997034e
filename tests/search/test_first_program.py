"""Tasks without an initial program: the LLM writes the first one, it is checked by the task's
own evaluation (retrying with the error fed back) and becomes candidate 1; evolution follows."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from support.scripted_llm import COUNTER_MODULE_EVALUATOR, ScriptedLLM, incrementing
from support.store_queries import sql, stored_events

from cambrian.api import resume, start
from cambrian.meta.comprehension import REQUEST_LINE as BRIEF_REQUEST
from cambrian.mutate.first_program import REQUEST_LINE as PROGRAM_REQUEST
from cambrian.search.engine import RunAborted
from cambrian.store.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "heuristic_contest"
STATEMENT = ("Write a Python module that defines an integer VALUE and a function run() returning "
             "it. The score is VALUE; a VALUE above 1000 is refused.\n")
BRIEF = ("SUMMARY:\n- Return a large VALUE.\nINPUT AND OUTPUT:\n- run() returns VALUE.\n"
         "SCORING:\n- The score is VALUE.\nCONSTRAINTS:\n- VALUE <= 1000.\n"
         "APPROACHES:\n1. Start small, then raise VALUE.\n")
NO_MARKERS = "Start from a constant\n```python\nVALUE = 3\n\n\ndef run():\n    return VALUE\n```\n"
SYNTAX_ERROR = "Start\n```python\nVALUE = 3\n\ndef run(:\n    return VALUE\n```\n"
TOO_BIG = "Start high\n```python\nVALUE = 5000\n\n\ndef run():\n    return VALUE\n```\n"


def python_task(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "problem.md").write_text(STATEMENT)
    (root / "evaluate.py").write_text(COUNTER_MODULE_EVALUATOR.format(limit=1000, sleep=0))
    (root / "config.yaml").write_text("task:\n  language: python\n")
    return root


def scripted(drafts: list[str], mutate: Callable = incrementing):
    """Brief requests get BRIEF, program requests the next of ``drafts`` (the last one repeats),
    everything else ``mutate``."""
    served: list[int] = []

    def reply(messages: list[dict[str, str]], index: int) -> str:
        last = messages[-1]["content"]
        if BRIEF_REQUEST in last:
            return BRIEF
        if last.startswith(PROGRAM_REQUEST):
            served.append(index)
            return drafts[min(len(served), len(drafts)) - 1]
        return mutate(messages, index)
    return reply


def sets(llm: ScriptedLLM, generations: int, *extra: str) -> list[str]:
    return ["llm.models=[" + json.dumps(llm.model_config()) + "]", "novelty.enabled=false",
            "meta.enabled=false", f"evolution.generations={generations}", *extra]


def program_requests(llm: ScriptedLLM) -> list[list[dict[str, str]]]:
    return [m for m in llm.requests if m[-1]["content"].startswith(PROGRAM_REQUEST)]


def test_llm_writes_the_first_program_and_the_run_completes(tmp_path: Path):
    task = python_task(tmp_path / "task")
    with ScriptedLLM(scripted([NO_MARKERS])) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=sets(llm, 3))
        summary = asyncio.run(evolution.run())
        evolution.store.close()
        requests = program_requests(llm)

    assert summary.initial_score == 3.0 and summary.evaluations == 3
    assert summary.best_score is not None and summary.best_score >= 3.0
    assert len(requests) == 1
    system = requests[0][0]["content"]
    assert STATEMENT.strip() in system and "1. Start small, then raise VALUE." in system
    store = Store.open(tmp_path / "run")
    first = store.candidates.get(1)
    assert first.source == ("# EVOLVE-BLOCK-START\nVALUE = 3\n\n\ndef run():\n    return VALUE\n"
                            "# EVOLVE-BLOCK-END\n")
    assert first.operator == "init" and first.status == "correct"
    assert first.description == "Start from a constant"
    assert first.notes == {"written_by_llm": True, "attempts": 1, "markers_added": True}
    purpose = sql(store, "SELECT c.purpose FROM candidates k JOIN contexts c "
                            "ON c.id = k.context_id WHERE k.id = 1").fetchone()[0]
    assert purpose == "first_program"
    # The check was the evaluation: candidate 1 was evaluated once, not again by the loop.
    assert sql(store, "SELECT COUNT(*) FROM evaluations WHERE candidate_id=1").fetchone()[0] == 1
    assert (tmp_path / "run" / "best" / "program.py").exists()
    store.close()


def test_failed_drafts_are_fed_back_until_one_passes(tmp_path: Path):
    task = python_task(tmp_path / "task")
    with ScriptedLLM(scripted([SYNTAX_ERROR, TOO_BIG, NO_MARKERS])) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=sets(llm, 1))
        summary = asyncio.run(evolution.run())
        evolution.store.close()
        requests = program_requests(llm)

    assert summary.initial_score == 3.0 and len(requests) == 3
    second, third = requests[1][-1]["content"], requests[2][-1]["content"]
    assert "## Your previous attempt" in second and "def run(:" in second and "syntax" in second
    assert "VALUE = 5000" in third and "exceeds the limit" in third
    store = Store.open(tmp_path / "run")
    failures = [e["payload"] for e in stored_events(store, "first_program_failed")]
    assert [f["attempt"] for f in failures] == [1, 2]
    assert "syntax" in failures[0]["error"] and "exceeds the limit" in failures[1]["error"]
    assert store.candidates.get(1).notes["attempts"] == 3
    store.close()


def test_when_no_draft_passes_the_run_aborts_clearly_and_resume_tries_again(tmp_path: Path):
    task = python_task(tmp_path / "task")
    with ScriptedLLM(scripted(["I would start with a greedy program."])) as llm:
        evolution = start(task, run_dir=tmp_path / "run",
                          overrides=sets(llm, 1, "first_program.attempts=2"))
        with pytest.raises(RunAborted, match=r"no initial program and 2 attempt\(s\)") as info:
            asyncio.run(evolution.run())
        evolution.store.close()
        assert "no code block found" in str(info.value)
        assert len(program_requests(llm)) == 2
    store = Store.open(tmp_path / "run")
    assert store.candidates.list() == [] and len(stored_events(store, "first_program_failed")) == 2
    store.close()

    with ScriptedLLM(scripted([NO_MARKERS])) as llm:
        evolution = resume(tmp_path / "run", overrides=sets(llm, 1))
        summary = asyncio.run(evolution.run())
        evolution.store.close()
        # The brief was written in the first session and is not asked for again.
        assert not any(BRIEF_REQUEST in m[-1]["content"] for m in llm.requests)
    assert summary.initial_score == 3.0 and summary.evaluations == 1


PRIORITY_LINE = "return (double)value / steps_there;"


def priority_tweak(messages: list[dict[str, str]], index: int) -> str:
    variant = f"return value / (steps_there + {index % 7 + 1} * 0.1);"
    return ("Weigh the distance more\n<<<<<<< SEARCH\n"
            f"    {PRIORITY_LINE}\n=======\n    {variant}\n>>>>>>> REPLACE\n")


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_judged_cpp_task_without_initial_program(tmp_path: Path):
    task = tmp_path / "contest"
    shutil.copytree(EXAMPLE, task)
    baseline = (task / "initial.cpp").read_text()
    (task / "initial.cpp").unlink()
    config = yaml.safe_load((task / "config.yaml").read_text())
    del config["task"]["initial_program"]
    (task / "config.yaml").write_text(yaml.safe_dump(config))
    draft = f"Greedy tour by value per distance\n```cpp\n{baseline}```\n"

    with ScriptedLLM(scripted([draft], mutate=priority_tweak)) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=sets(
            llm, 2, "evolution.patch_types=[diff]", "evolution.patch_type_probs=[1.0]",
            "judge.public_seeds=[0,3]", "judge.tiers.quick_cases=2"))
        summary = asyncio.run(evolution.run())
        evolution.store.close()
        request = program_requests(llm)[0]

    instructions = request[-1]["content"]
    assert "standard input" in instructions and "// EVOLVE-BLOCK-START" in instructions
    assert summary.initial_score is not None and summary.evaluations == 2
    store = Store.open(tmp_path / "run")
    first = store.candidates.get(1)
    assert first.source == baseline and first.notes["markers_added"] is False
    stages = [r[0] for r in sql(store, 
        "SELECT stage FROM evaluations WHERE candidate_id=1 ORDER BY id")]
    assert stages[-1] == "main" and stages[0] == "quick"  # the judge's normal tiered evaluation
    store.close()
