"""Text artifacts through the whole loop: a plain-text (and a markdown) candidate evolved by the
scripted model, scored by an evaluator that reports per-example cases; the failed examples reach
the prompt for the model to reflect on, the children are text, and the run's edits are labelled
with the taxonomy read for a text. Real store, sandbox, HTTP provider; only the replies are
scripted."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from support.scripted_llm import ScriptedLLM

from cambrian.api import start
from cambrian.config import ModelConfig
from cambrian.search.novelty_judge import JUDGE_QUESTION
from cambrian.store.store import Store
from cambrian.trace.llm_choice import judge_id, provider_for
from cambrian.trace.taxonomy import TEXT_RUBRIC_VERSION, TEXT_SYSTEM_PROMPT
from cambrian.trace.taxonomy_judge import JudgeSettings, cached_labels, label_run

TOPICS = ("sports", "business", "science", "politics")

# Scores a text by the topic words it names; each topic is one case, failed while absent.
EVALUATOR = f"""from pathlib import Path

from cambrian.task.blocks import without_markers

TOPICS = {TOPICS!r}


def evaluate(program_path):
    text = without_markers(Path(program_path).read_text()).lower()
    cases = [{{"input": topic, "expected": "named", "output": "named" if topic in text
              else "missing", "correct": topic in text,
              "feedback": "" if topic in text else f"the text never says {{topic}}"}}
             for topic in TOPICS]
    named = sum(case["correct"] for case in cases)
    return {{"combined_score": named / len(TOPICS), "public": {{"named": named}},
            "text_feedback": "one point per topic named", "cases": cases}}
"""
FAILED = re.compile(r"## Examples it got wrong \((\d+) of (\d+)\)\n1\. input: (\w+)")
CURRENT = re.compile(r"## Current text\n```text\n(.*?)\n```", re.DOTALL)


def write_task(root: Path, initial_name: str, initial: str) -> Path:
    root.mkdir(parents=True)
    (root / initial_name).write_text(initial)
    (root / "evaluate.py").write_text(EVALUATOR)
    return root


def reflecting(messages: list[dict[str, str]], index: int) -> str:
    """Adds the first topic the prompt lists as failed, in the reply format asked for."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    failed = FAILED.search(user)
    topic = failed.group(3) if failed else "sports"
    if "one or more edits" in user:  # the diff format: one SEARCH/REPLACE edit
        current = CURRENT.search(user)
        assert current, "the prompt shows the current text in a text fence"
        last = [line for line in current.group(1).splitlines() if line.strip()
                and "EVOLVE-BLOCK" not in line][-1]
        return (f"The text never named {topic}\n<<<<<<< SEARCH\n{last}\n=======\n"
                f"{last}\nAlso consider {topic}.\n>>>>>>> REPLACE\n")
    block = re.search(r"```text\n(.*?)```", user, re.DOTALL)
    body = block.group(1) if block else ""
    kept = "\n".join(line for line in body.splitlines() if "EVOLVE-BLOCK" not in line)
    return f"Name {topic} too\n```text\n{kept}\nConsider {topic}.\n```\n"


def run_text_task(task: Path, run_dir: Path, llm: ScriptedLLM, *sets: str) -> Store:
    evolution = start(task, run_dir=run_dir, overrides=[
        "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=6",
        "evolution.max_parallel_evaluations=1", "novelty.enabled=false", "meta.enabled=false",
        "evolution.target_score=1.0", *sets])
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()
    return Store.open(run_dir)


def test_a_prompt_evolves_as_text_with_its_failed_examples_in_the_prompt(tmp_path: Path):
    task = write_task(tmp_path / "task", "initial.txt", "Answer in one word.\n")
    every_intent = "[tuning, local_fix, refinement, improve_step, strategy, refactor, crossover]"
    with ScriptedLLM(reflecting) as llm:
        store = run_text_task(task, tmp_path / "run", llm, f"mutation.types={every_intent}")
        mutation_prompts = [request for request in llm.requests
                            if any("## Your task" in m["content"] for m in request)]
    try:
        rows = store.candidates.list()
        assert rows[0].language == "text"
        evaluated = [row for row in rows if row.status == "correct"]
        assert len(evaluated) >= 3 and max(row.score for row in evaluated) >= 0.75
        for row in evaluated[1:]:  # children are text, every topic named came from a reply
            assert row.language == "text" and "def " not in row.source
            assert row.source.startswith("Answer in one word.")
        # Neither an improvement step (no function to wire it to) nor tuning (no settings).
        intents = {row.notes.get("intent") for row in rows[1:]}
        assert intents and not intents & {"improve_step", "tuning"}
        initial = store.evaluations.latest(rows[0].id)
        assert [case["correct"] for case in initial.extra["cases"]] == [False] * 4
        assert "[cases] 4 of 4 examples failed" in initial.text_feedback
    finally:
        store.close()

    first = mutation_prompts[0]
    system, user = first[0]["content"], first[1]["content"]
    assert system.startswith("You are an expert writer. You improve a text")
    assert "programmer" not in system and "EVOLVE-BLOCK" not in system  # no markers: all of it
    assert "## Current text\n```text\nAnswer in one word.\n```" in user
    assert "## Examples it got wrong (4 of 4)\n1. input: sports\n   expected: named" in user
    assert "answered: missing\n   feedback: the text never says sports" in user
    assert "why did the current text fail on them?" in user
    assert "function" not in user.split("## Your task")[1]
    # Each later prompt lists only what its parent still misses.
    shown = {tuple(FAILED.search(m[1]["content"]).groups()[:2])
             for m in mutation_prompts if FAILED.search(m[1]["content"])}
    assert ("1", "4") in shown or ("2", "4") in shown


def test_a_markdown_text_keeps_what_lies_outside_its_markers(tmp_path: Path):
    initial = ("# Instructions\n\nFixed header.\n\n<!-- EVOLVE-BLOCK-START -->\n"
               "Answer in one word.\n<!-- EVOLVE-BLOCK-END -->\n\nFixed footer.\n")
    task = write_task(tmp_path / "task", "initial.md", initial)
    with ScriptedLLM(reflecting) as llm:
        store = run_text_task(task, tmp_path / "run", llm)
        system = next(r[0]["content"] for r in llm.requests
                      if any("## Your task" in m["content"] for m in r))
    try:
        rows = store.candidates.list()
        assert rows[0].language == "markdown"
        children = [row for row in rows[1:] if row.status == "correct"]
        assert children and max(row.score for row in children) > rows[0].score
        for row in children:
            assert row.source.startswith("# Instructions\n\nFixed header.\n\n"
                                         "<!-- EVOLVE-BLOCK-START -->\n")
            assert row.source.endswith("<!-- EVOLVE-BLOCK-END -->\n\nFixed footer.\n")
    finally:
        store.close()
    assert "Only the text between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END lines" in system


def test_the_edits_of_a_text_run_are_labelled_with_the_text_reading(tmp_path: Path):
    task = write_task(tmp_path / "task", "initial.txt", "Answer in one word.\n")
    with ScriptedLLM(reflecting) as llm:
        run_text_task(task, tmp_path / "run", llm).close()

    def judge(messages: list[dict[str, str]], index: int) -> str:
        assert messages[0]["content"] == TEXT_SYSTEM_PROMPT
        edits = re.findall(r"### Edit (E\d+) \(text\)", messages[1]["content"])
        return json.dumps({"edits": [{"id": name, "labels": ["composition"]} for name in edits]})

    with ScriptedLLM(judge) as judge_llm:
        config = ModelConfig(**judge_llm.model_config())
        labelling, _ = asyncio.run(label_run(tmp_path / "run", provider_for(config),
                                             judge_id(config), JudgeSettings(batch_size=4)))
    assert labelling.rubric == TEXT_RUBRIC_VERSION and labelling.labels
    assert set(labelling.labels.values()) == {("composition",)}
    assert cached_labels(tmp_path / "run", judge_id(config)) == labelling.labels


def test_novelty_refuses_a_text_that_only_changes_layout_or_wording(tmp_path: Path):
    """Layout only: refused by the text's own words; the same meaning reworded: refused by the
    judge, asked about a change to a text; a new instruction passes."""
    mutations = []

    def responder(messages: list[dict[str, str]], index: int) -> str:
        user = messages[-1]["content"]
        if JUDGE_QUESTION in user:
            assert user.startswith("Here is a proposed change to a text.")
            return "DIFFERENT" if "consider" in user.lower() else "SAME"
        mutations.append(index)
        line = "Answer in one word."
        if len(mutations) == 1:
            new = "Answer in\n   one word."  # the same words, laid out anew
        elif len(mutations) == 2:
            new = "Reply in one word."  # the same meaning, reworded
        else:
            return reflecting(messages, index)
        if "one or more edits" in user:
            return f"Reflow\n<<<<<<< SEARCH\n{line}\n=======\n{new}\n>>>>>>> REPLACE\n"
        return f"Reflow\n```text\n{new}\n```\n"

    task = write_task(tmp_path / "task", "initial.txt", "Answer in one word.\n")
    with ScriptedLLM(responder) as llm:
        store = run_text_task(task, tmp_path / "run", llm, "novelty.enabled=true",
                              "novelty.threshold=0.5", "novelty.max_attempts=3",
                              "novelty.judge_when=always", "evolution.generations=2")
    try:
        reasons = [row.error for row in store.candidates.list("rejected")]
        assert any(reason.endswith("only comments or layout differ") for reason in reasons)
        assert any(reason.endswith("the novelty judge found no meaningful difference")
                   for reason in reasons)
        accepted = [row for row in store.candidates.list("correct")[1:]]
        assert accepted and all("consider" in row.source.lower() for row in accepted)
    finally:
        store.close()
