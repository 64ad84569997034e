"""OpenEvolve's one-call helpers on cambrian: evolve_function(func, test_cases),
evolve_algorithm(cls, benchmark) and evolve_code(code, evaluator), each a real run with the
scripted OpenAI-compatible server and sandboxed evaluations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM

import cambrian
from cambrian.api.one_call import function_cases_evaluator

QUIET = ["novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
         "mutation.derive_moves=false"]


def add_one(x):
    return x + 2


class Doubler:
    def factor(self):
        return 1


def benchmark(instance):
    """A benchmark in this (test) module: sent to the evaluation process by value."""
    return {"combined_score": float(instance.factor()), "factor": instance.factor()}


def user_of(messages: list[dict[str, str]]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def replace_line(pattern: str, new_line) -> callable:
    """Replace the program's line matching ``pattern`` with ``new_line(match, index)``, in the
    format the prompt asks for."""
    def respond(messages: list[dict[str, str]], index: int) -> str:
        user = user_of(messages)
        found = re.search(pattern, user)
        if found is None:
            return "No change."
        old, new = found.group(0), new_line(found, index)
        if "SEARCH" in user.split("## Your task")[-1]:
            return f"Change it\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"
        code = re.search(r"```python\n(.*?)```", user, re.DOTALL).group(1)
        return "Change it\n```python\n" + code.replace(old, new) + "```\n"
    return respond


def options(llm: ScriptedLLM, tmp_path: Path, **more):
    return {"model": "scripted", "api_base": llm.base_url, "run_dir": tmp_path / "run",
            "overrides": QUIET, **more}


def test_the_cases_evaluator_scores_the_share_passed(tmp_path: Path):
    program = tmp_path / "p.py"
    program.write_text("def add_one(x):\n    return x + 1 if x < 5 else x\n")
    evaluate = function_cases_evaluator("add_one", [(1, 2), (4, 5), (7, 8), ((9,), 10)])
    result = evaluate(str(program))
    assert result["combined_score"] == 0.5 and result["tests_passed"] == 2
    assert "add_one(7) returned 7, expected 8" in result["text_feedback"]


def test_evolve_function_fixes_a_function_against_its_test_cases(tmp_path: Path):
    responder = replace_line(r" {4}return x \+ \d+", lambda m, i: "    return x + 1")
    with ScriptedLLM(responder) as llm:
        result = cambrian.evolve_function(add_one, [(1, 2), (5, 6), (0, 1)], iterations=1,
                                          **options(llm, tmp_path))
    assert result.initial_score == 0.0 and result.best_score == 1.0
    assert "return x + 1" in result.best_code and "def add_one(x):" in result.best_code
    assert result.best_metrics == {"tests_passed": 3, "tests_total": 3}
    assert result.evaluations == 1 and result.best_code.startswith("# EVOLVE-BLOCK-START\n")
    statement = (tmp_path / "run" / "task" / "evaluate.py").read_text()
    assert "Make `add_one` return the expected output for every test case" in statement


def test_evolve_algorithm_scores_each_version_with_the_benchmark(tmp_path: Path):
    responder = replace_line(r" {8}return (\d+)",
                             lambda m, i: f"        return {int(m.group(1)) + 2}")
    with ScriptedLLM(responder) as llm:
        result = cambrian.evolve_algorithm(Doubler, benchmark, iterations=2,
                                           **options(llm, tmp_path))
    assert result.initial_score == 1.0 and result.best_score >= 3.0
    assert "class Doubler" in result.best_code
    assert result.best_metrics["factor"] == int(result.best_score)


def test_evolve_code_is_run_evolution_with_iterations(tmp_path: Path):
    code = "# EVOLVE-BLOCK-START\nVALUE = 1\n# EVOLVE-BLOCK-END\n"

    def score(program_path):
        import runpy
        return {"combined_score": float(runpy.run_path(program_path)["VALUE"])}

    responder = replace_line(r"VALUE = (\d+)", lambda m, i: f"VALUE = {int(m.group(1)) + 5}")
    with ScriptedLLM(responder) as llm:
        result = cambrian.evolve_code(code, score, iterations=1, **options(llm, tmp_path))
    assert result.evaluations == 1 and result.best_score == 6.0
    with pytest.raises(TypeError, match="iterations or generations"):
        cambrian.evolve_code(code, score, iterations=1, generations=2)
    with pytest.raises(ValueError, match="input, expected_output"):
        cambrian.evolve_function(add_one, [])


def test_an_openevolve_config_file_is_translated_for_the_helpers(tmp_path: Path):
    config = tmp_path / "config.yaml"
    config.write_text("max_iterations: 1\nprompt:\n  system_message: Make add_one add one.\n"
                      "evaluator:\n  timeout: 30\n")
    responder = replace_line(r" {4}return x \+ \d+", lambda m, i: "    return x + 1")
    with ScriptedLLM(responder) as llm:
        result = cambrian.evolve_function(add_one, [(1, 2)], config=config,
                                          **options(llm, tmp_path))
    assert result.evaluations == 1 and result.best_score == 1.0  # max_iterations: 1
    stored = (tmp_path / "run" / "config.yaml").read_text()
    assert "Make add_one add one." in stored and "timeout_s: 30.0" in stored
