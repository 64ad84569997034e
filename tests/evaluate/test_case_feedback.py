"""Per-example results (``cases``) an evaluator reports beside its score, through both
contracts: kept in the result's extra, counted in its feedback, never costing the score when
malformed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cambrian.evaluate.case_feedback import (
    MAX_CASES,
    MAX_FIELD_CHARS,
    read_cases,
    stored_cases,
)
from cambrian.evaluate.result_mapping import map_module_payload
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

PROMPT = "Answer with one word.\n"
MODULE_EVALUATOR = """from pathlib import Path

def evaluate(program_path):
    prompt = Path(program_path).read_text()
    cases = [{"input": s, "expected": "yes", "output": "yes" if "one" in s else "no",
              "correct": "one" in s} for s in ("one", "two", "three")]
    return {"combined_score": 1 / 3, "text_feedback": "scored on three inputs",
            "cases": cases, "prompt_chars": len(prompt)}
"""
COMMAND_EVALUATOR = """import argparse, json
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--program_path")
parser.add_argument("--results_dir")
args = parser.parse_args()
cases = [{"input": "two", "expected": "yes", "output": "no", "correct": False,
          "feedback": "two has no one in it"}]
(Path(args.results_dir) / "metrics.json").write_text(json.dumps(
    {"combined_score": 0.0, "cases": cases}))
"""


def test_cases_are_normalised_cut_and_counted() -> None:
    raw = [{"input": {"a": [1, 2]}, "expected": 3, "output": "x" * 2000, "correct": 0,
            "score": 0.25, "feedback": None, "unknown": "dropped"}] + [
        {"input": str(i), "correct": True} for i in range(MAX_CASES + 10)]
    cases, line = read_cases(raw, "evaluate()")
    assert len(cases) == MAX_CASES
    first = cases[0]
    assert first == {"input": '{"a": [1, 2]}', "expected": "3", "output": first["output"],
                     "correct": False, "score": 0.25}
    assert len(first["output"]) == MAX_FIELD_CHARS and first["output"].endswith("…")
    assert line == f"[cases] 1 of {MAX_CASES} examples failed ({MAX_CASES + 11} reported, " \
                   f"the first {MAX_CASES} kept)"
    assert read_cases([{"input": "a"}], "x") == ([{"input": "a"}], "[cases] 1 example")
    assert read_cases(None, "x") == ([], "")


def test_malformed_cases_are_left_out_and_the_score_kept() -> None:
    payload = {"metrics": {"combined_score": 0.5, "cases": "three failed"}}
    result = map_module_payload(payload, "evaluate() of evaluator.py")
    assert result.status == "ok" and result.combined_score == 0.5
    assert "cases" not in result.extra and stored_cases(result.extra) == ()
    assert result.text_feedback.startswith("[cases] left out: 'cases' in evaluate() of "
                                           "evaluator.py must be a list of objects")
    listed = map_module_payload({"metrics": {"combined_score": 0.5, "cases": [1, 2]}}, "here")
    assert listed.status == "ok" and "a list of other things" in listed.text_feedback


async def test_module_evaluator_cases_reach_the_result(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file("evaluate.py", MODULE_EVALUATOR)
    evaluator = ProgramEvaluator(EvaluatorSettings(evaluator_path=path,
                                                   program_filename="program.txt"))
    result = await evaluator.evaluate(PROMPT, work_dir)
    assert result.status == "ok", result.error
    assert [case["correct"] for case in stored_cases(result.extra)] == [True, False, False]
    assert result.extra["cases"][1] == {"input": "two", "expected": "yes", "output": "no",
                                        "correct": False}
    assert result.text_feedback == "scored on three inputs\n[cases] 2 of 3 examples failed"
    assert result.public == {"prompt_chars": len(PROMPT)}  # cases are no metric
    assert (work_dir / "program.txt").read_text() == PROMPT


async def test_command_evaluator_cases_reach_the_result(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file("evaluate.py", COMMAND_EVALUATOR)
    evaluator = ProgramEvaluator(EvaluatorSettings(evaluator_path=path, contract="command",
                                                   program_filename="program.txt"))
    result = await evaluator.evaluate(PROMPT, work_dir)
    assert result.status == "ok", result.error
    assert stored_cases(result.extra) == ({"input": "two", "expected": "yes", "output": "no",
                                           "correct": False,
                                           "feedback": "two has no one in it"},)
    assert result.text_feedback == "[cases] 1 of 1 example failed"
    assert "other_metrics" not in result.extra
