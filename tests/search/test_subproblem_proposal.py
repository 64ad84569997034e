"""Sub-problems the model proposes (seed 004 §10.2; `decomposition.propose`, on with
`--search contest`): the reply is checked against the run's cases, its grammar holds a local
model to the format, and in a real run the groups are stored once, steer the proposals and
survive a resume without a second call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.contest_task import EVALUATOR, reply
from support.grammar_check import accepts, llama_cpp, native_parse_ok, tokenizer_vocab
from support.scripted_llm import ScriptedLLM, write_counter_task

from cambrian.core.events import SubproblemsProposed
from cambrian.meta.subproblem_proposal import (
    CaseLine,
    case_lines,
    parse_groups,
    proposal_grammar,
    proposal_prompt,
)
from cambrian.store.store import Store

CASES = ["seed-0", "seed-1", "seed-2", "seed-3"]
ASKED = "Split the cases into independent sub-problems"
CLI = [sys.executable, "-m", "cambrian.cli"]


def test_groups_keep_known_cases_once_and_need_two_groups() -> None:
    text = ("Here is my plan.\n"
            "GROUP Small Maps: seed-0, SEED-2, seed-9 | few trees\n"
            "2. GROUP large: seed-1 seed-2; seed-3 | many trees\n"
            "GROUP empty: seed-7 | nothing known\n")
    groups = parse_groups(text, CASES, max_groups=4)
    assert [(g.name, g.cases, g.description) for g in groups] == [
        ("small_maps", ["seed-0", "seed-2"], "few trees"),
        ("large", ["seed-1", "seed-3"], "many trees")]  # seed-2 stays in its first group
    assert parse_groups("GROUP all: seed-0, seed-1 | every case", CASES, 4) == []
    assert parse_groups("no groups here", CASES, 4) == []
    assert len(parse_groups("\n".join(f"GROUP g{i}: {c} | x" for i, c in enumerate(CASES)),
                            CASES, max_groups=2)) == 2


def test_the_prompt_shows_each_case_result_and_input_header() -> None:
    stored = [{"case": "seed-0", "score": 344282.0, "time_s": 0.087, "verdict": "AC"},
              {"case": "seed-1", "score": 0, "verdict": "TLE", "message": "killed"}]
    lines = case_lines(stored, {"seed-0": "20  400\n"})
    assert lines == [CaseLine("seed-0", 344282.0, "AC", 0.087, "20 400"),
                     CaseLine("seed-1", 0.0, "TLE", None, "")]
    prompt = proposal_prompt("Collect apples in a grid.", lines, 3)
    assert "seed-0 | AC | score 344282 | 0.09 s | input starts: 20 400" in prompt
    assert "seed-1 | TLE | score 0" in prompt and "Collect apples" in prompt
    assert "2 to 3 lines" in prompt


@pytest.mark.skipif(llama_cpp is None, reason="llama_cpp is not importable yet")
def test_the_grammar_compiles_and_admits_only_known_cases() -> None:
    grammar = proposal_grammar(CASES, max_groups=3)
    assert native_parse_ok(grammar)
    with tokenizer_vocab() as model:
        good = "GROUP small: seed-0, seed-2 | few trees\nGROUP large: seed-1, seed-3 | many\n"
        assert accepts(model, grammar, good)
        assert not accepts(model, grammar, "GROUP small: seed-0 | only one group\n")
        assert not accepts(model, grammar, good.replace("seed-3", "seed-9"))


def proposing(messages: list[dict[str, str]], index: int) -> str:
    if ASKED in messages[-1]["content"]:
        return ("GROUP small: small-1, small-2 | VALUE near 12 is best\n"
                "GROUP large: large-1, large-2 | the larger VALUE the better\n")
    return reply(messages, index)


def test_a_contest_run_groups_the_cases_once_and_steers_by_them(tmp_path: Path) -> None:
    # The contest task with no sub-problems declared: the model proposes them.
    task = write_counter_task(tmp_path / "task", config="reflection:\n  interval: 4\n")
    (task / "evaluate.py").write_text(EVALUATOR)
    run_dir = tmp_path / "run"
    with ScriptedLLM(proposing) as llm:
        sets = ["--set", "llm.models=[" + json.dumps(llm.model_config()) + "]",
                "--set", "novelty.enabled=false", "--set", "meta.enabled=false"]
        first = subprocess.run([*CLI, "run", str(task), "--run-dir", str(run_dir), "-g", "8",
                                "-q", "--search", "contest", *sets],
                               capture_output=True, text=True, timeout=600)
        assert first.returncode == 0, first.stderr[-3000:]
        status = subprocess.run([*CLI, "status", str(run_dir)], capture_output=True,
                                text=True, timeout=300)
        assert "sub-problems proposed: small (2 cases); large (2 cases)" in status.stdout
        resumed = subprocess.run([*CLI, "resume", str(run_dir), "-g", "12", "-q"],
                                 capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    store = Store.open(run_dir)
    try:
        [proposed] = store.events.of_type(SubproblemsProposed)  # once, the resume too
        assert [(g["name"], g["cases"]) for g in proposed.subproblems] == [
            ("small", ["small-1", "small-2"]), ("large", ["large-1", "large-2"])]
        assert len(store.contexts.list("decomposition")) == 1
        steered = {row.notes["subproblem"] for row in store.candidates.list()
                   if row.notes.get("subproblem")}
        assert steered >= {"small", "large"}
    finally:
        store.close()
