"""Problem comprehension: the brief is written once, stored, shown in every mutation prompt's
system message, read back (not rewritten) on resume, and a bad reply only costs the brief."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql, stored_events

from cambrian.api import resume, start
from cambrian.config import ConfigError, PromptConfig
from cambrian.lang.languages import PYTHON
from cambrian.meta.comprehension import (
    BRIEF_FILENAME,
    REQUEST_LINE,
    parse_brief,
    prompt_brief,
    stored_outcome,
)
from cambrian.mutate.prompts import ProgramView, PromptBuilder
from cambrian.store.store import Store
from cambrian.task.folder import Task

STATEMENT = "Make VALUE as large as possible. A VALUE above 1000 is refused.\n"
BRIEF_REPLY = (
    "SUMMARY:\n- Maximise VALUE without passing the limit.\n"
    "INPUT AND OUTPUT:\n- run() returns the integer VALUE.\n"
    "SCORING:\n- The score is VALUE; above 1000 the program fails.\n"
    "CONSTRAINTS:\n- VALUE stays at most 1000.\n"
    "APPROACHES:\n1. Raise VALUE in large steps.\n2. Close in on the limit by bisection.\n"
)


def is_comprehension(messages: list[dict[str, str]]) -> bool:
    return REQUEST_LINE in messages[-1]["content"]


def replying(brief_reply: str):
    def reply(messages: list[dict[str, str]], index: int) -> str:
        return brief_reply if is_comprehension(messages) else incrementing(messages, index)
    return reply


def statement_task(root: Path) -> Path:
    task = write_counter_task(root)
    (task / "problem.md").write_text(STATEMENT)
    return task


def sets(llm: ScriptedLLM, generations: int, *extra: str) -> list[str]:
    return ["llm.models=[" + json.dumps(llm.model_config()) + "]", "novelty.enabled=false",
            "meta.enabled=false", f"evolution.generations={generations}", *extra]


def run_to_end(evolution) -> None:
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()


def mutation_systems(requests: list[list[dict[str, str]]]) -> list[str]:
    return [m[0]["content"] for m in requests
            if not is_comprehension(m) and m[0]["role"] == "system"]


def test_brief_is_stored_reaches_every_prompt_and_is_not_rewritten_on_resume(tmp_path: Path):
    task = statement_task(tmp_path / "task")
    with ScriptedLLM(replying(BRIEF_REPLY)) as llm:
        run_to_end(start(task, run_dir=tmp_path / "run", overrides=sets(llm, 3)))
        first_session = list(llm.requests)
        run_to_end(resume(tmp_path / "run", overrides=sets(llm, 5)))
        requests = list(llm.requests)

    assert sum(is_comprehension(m) for m in requests) == 1
    assert is_comprehension(requests[0])  # before the first proposal
    systems = mutation_systems(requests)
    assert len(systems) >= 5 and len(mutation_systems(first_session)) >= 3
    for system in systems:  # the same brief in every prompt, the resumed session's included
        assert "## Problem brief" in system
        assert "1. Raise VALUE in large steps." in system
        assert "Scoring:\n- The score is VALUE" in system
    assert len(set(systems)) == 1  # a fixed system message: the KV-cache prefix stays reusable

    store = Store.open(tmp_path / "run")
    outcome = stored_outcome(store)
    assert outcome is not None and outcome["status"] == "ok"
    assert outcome["sections"]["APPROACHES"] == ["Raise VALUE in large steps.",
                                                 "Close in on the limit by bisection."]
    calls = sql(store, "SELECT COUNT(*) FROM contexts WHERE purpose='comprehension'").fetchone()
    assert calls[0] == 1
    brief_file = (tmp_path / "run" / BRIEF_FILENAME).read_text()
    assert "Constraints:\n- VALUE stays at most 1000." in brief_file
    store.close()


def test_malformed_brief_is_recorded_and_the_run_goes_on_without_it(tmp_path: Path):
    task = statement_task(tmp_path / "task")
    with ScriptedLLM(replying("It is a counting problem; just count upwards.")) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=sets(llm, 3))
        summary = asyncio.run(evolution.run())
        evolution.store.close()
        run_to_end(resume(tmp_path / "run", overrides=sets(llm, 4)))
        requests = list(llm.requests)

    assert summary.evaluations == 3 and summary.best_score is not None
    assert sum(is_comprehension(m) for m in requests) == 1  # not retried on resume
    systems = mutation_systems(requests)
    assert systems and all("## Problem brief" not in s and STATEMENT.strip() in s for s in systems)
    store = Store.open(tmp_path / "run")
    outcome = stored_outcome(store)
    assert outcome is not None and outcome["status"] == "failed"
    assert "SUMMARY:" in outcome["error"] and outcome["context_id"] is not None
    assert [e["payload"]["status"] for e in stored_events(store, "comprehension")] == ["failed"]
    assert not (tmp_path / "run" / BRIEF_FILENAME).exists()
    store.close()


def test_a_failed_comprehension_call_is_recorded_and_the_run_goes_on(tmp_path: Path):
    task = statement_task(tmp_path / "task")

    def refuse_first(index: int) -> int:
        return 400 if index == 0 else 200

    with ScriptedLLM(replying(BRIEF_REPLY), status_for=refuse_first) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=sets(llm, 2))
        summary = asyncio.run(evolution.run())
        evolution.store.close()
    assert summary.evaluations == 2
    store = Store.open(tmp_path / "run")
    outcome = stored_outcome(store)
    assert outcome is not None and outcome["status"] == "failed"
    assert outcome["error"].startswith("the LLM call failed: ") and "400" in outcome["error"]
    store.close()


def test_no_comprehension_without_a_statement_or_when_disabled(tmp_path: Path):
    with ScriptedLLM(replying(BRIEF_REPLY)) as llm:
        run_to_end(start(write_counter_task(tmp_path / "plain"), run_dir=tmp_path / "run1",
                         overrides=sets(llm, 1)))
        run_to_end(start(statement_task(tmp_path / "task"), run_dir=tmp_path / "run2",
                         overrides=sets(llm, 1, "comprehension.enabled=false")))
        assert not any(is_comprehension(m) for m in llm.requests)
    for run_dir in ("run1", "run2"):
        store = Store.open(tmp_path / run_dir)
        assert stored_outcome(store) is None
        store.close()


def test_an_unknown_comprehension_model_is_a_config_error(tmp_path: Path):
    with ScriptedLLM(replying(BRIEF_REPLY)) as llm:
        with pytest.raises(ConfigError, match="comprehension.model 'big' is not one of llm.models"):
            start(statement_task(tmp_path / "task"), run_dir=tmp_path / "run",
                  overrides=sets(llm, 1, "comprehension.model=big"))
        assert llm.requests == []


def test_parse_brief_tolerates_markdown_and_names_what_is_missing():
    text = ("Here is the brief.\n## Summary\nPack circles.\n**Input/Output format:** none, "
            "run() returns centers\n### Scoring\n* sum of radii\nScoring is strict here.\n"
            "Key constraints: 26 circles\n- inside the unit square\n"
            "Candidate approaches:\n1) hexagonal grid\n2. local search\n")
    brief, error = parse_brief(text)
    assert error == "" and brief is not None
    assert brief.sections["SUMMARY"] == ["Pack circles."]
    assert brief.sections["INPUT AND OUTPUT"] == ["none, run() returns centers"]
    # A sentence that starts with a section's name is content, not a heading.
    assert brief.sections["SCORING"] == ["sum of radii", "Scoring is strict here."]
    assert brief.sections["CONSTRAINTS"] == ["26 circles", "inside the unit square"]
    assert brief.text().endswith("Candidate approaches, most promising first:\n"
                                 "1. hexagonal grid\n2. local search")
    brief, error = parse_brief("SUMMARY:\n- x\nSCORING:\n- y\n")
    assert brief is None
    assert error.startswith("the reply lacks the sections INPUT AND OUTPUT:, CONSTRAINTS:, "
                            "APPROACHES:")


def test_prompt_brief_keeps_whole_lines():
    brief, _ = parse_brief(BRIEF_REPLY)
    assert brief is not None
    assert prompt_brief(brief.text(), 10_000) == brief.text()
    cut = prompt_brief(brief.text(), 60)
    assert cut is not None and len(cut) <= 60 and brief.text().startswith(cut)


def test_tight_context_shrinks_the_statement_before_the_brief(tmp_path: Path):
    task = Task(root=tmp_path, name="t", initial_path=None, initial_source=None, language=PYTHON,
                evaluator_path=tmp_path / "evaluate.py", contract="module",
                problem_statement="Statement line. " * 400, description=None, direction="maximize")
    builder = PromptBuilder(task, PromptConfig())
    builder.brief = "Summary:\n- " + "brief words " * 120  # ~360 tokens
    parent = ProgramView(id=1, source="# EVOLVE-BLOCK-START\nVALUE = 1\n# EVOLVE-BLOCK-END\n",
                         score=1.0, correct=True)

    def count(text: str) -> int:
        return len(text) // 4

    def system(budget: int) -> str:
        messages = builder.build(kind="diff", fmt="diff", parent=parent, budget_tokens=budget,
                                 count_tokens=count, intent="tuning")
        assert sum(count(m.content) + 8 for m in messages) <= budget
        assert "Tune the parameters only" in messages[1].content
        return messages[0].content

    roomy = system(10_000)
    assert "Statement line." in roomy and "brief words" in roomy and "[… truncated" not in roomy
    tight = system(700)  # too small for the statement even at 1500 characters
    assert "## Problem statement" not in tight and roomy.split("## Problem brief")[1] in tight
    tighter = system(480)  # too small for the whole brief: 800 characters of it remain
    assert "## Problem statement" not in tighter
    assert "## Problem brief" in tighter and "[… truncated …]" in tighter
    assert "## Problem brief" not in system(260)  # dropped last, when nothing else fits


def test_parse_brief_drops_echoed_template_lines_and_repeats():
    # What the 1.5B model wrote for examples/function_minimum: one line five times over, and the
    # request's placeholders as its approaches.
    line = "- The function takes a numpy array of length `dim` and returns a float"
    echoed = "\n".join(["SUMMARY:", "- Minimise a black-box function", "INPUT AND OUTPUT:", line,
                        line, "SCORING:", "- log10(1 + gap), lower is better", "CONSTRAINTS:",
                        line, line, "APPROACHES:",
                        "1. (the algorithmic approach most likely to score well)",
                        "2. (the next most promising one)"])
    brief, error = parse_brief(echoed)
    assert brief is None and "APPROACHES:" in error and "CONSTRAINTS:" in error
    usable = echoed.replace("1. (the algorithmic approach most likely to score well)",
                            "1. CMA-ES with restarts").replace(
        "CONSTRAINTS:\n" + line, "CONSTRAINTS:\n- 3000 calls per problem")
    brief, error = parse_brief(usable)
    assert error == "" and brief is not None
    assert brief.sections["APPROACHES"] == ["CMA-ES with restarts"]
    assert brief.sections["CONSTRAINTS"] == ["3000 calls per problem"]
    assert brief.text().count("returns a float") == 1
