"""The command contract (ShinkaEvolve style) end to end through ProgramEvaluator."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

PROGRAM = "def solve():\n    return 42\n"

# A ShinkaEvolve-shaped evaluate.py; WRITE_RESULTS is replaced per test.
COMMAND_EVALUATOR = """
import argparse, json, os, sys
from pathlib import Path

def main(program_path, results_dir, extra):
    results = Path(results_dir)
WRITE_RESULTS

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--program_path", required=True)
    parser.add_argument("--results_dir", required=True)
    args, extra = parser.parse_known_args()
    main(args.program_path, args.results_dir, extra)
"""


def command_evaluator(
    write_file: Callable[[str, str], Path], body: str, **overrides: object
) -> ProgramEvaluator:
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    path = write_file("evaluate.py", COMMAND_EVALUATOR.replace("WRITE_RESULTS", indented))
    evaluator = ProgramEvaluator(EvaluatorSettings(evaluator_path=path, **overrides))  # type: ignore[arg-type]
    assert evaluator.contract == "command"
    return evaluator


async def test_metrics_and_correct_json_map_onto_the_result(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    evaluator = command_evaluator(
        write_file,
        """
source = Path(program_path).read_text()
metrics = {
    "combined_score": 0.8,
    "public": {"length": len(source)},
    "private": {"hidden_test": 0.5},
    "text_feedback": "looks fine",
    "extra_data": {"extra_args": extra, "cwd": os.getcwd()},
    "execution_time_mean": 0.01,
}
(results / "metrics.json").write_text(json.dumps(metrics))
(results / "correct.json").write_text(json.dumps({"correct": True, "error": None}))
""",
        extra_args={"num_experiment_runs": "3"},
    )
    result = await evaluator.evaluate(PROGRAM, work_dir)
    assert result.status == "ok", result.error
    assert result.combined_score == 0.8
    assert result.public == {"length": len(PROGRAM)}
    assert result.private == {"hidden_test": 0.5}
    assert result.text_feedback == "looks fine"
    assert result.extra["extra_data"]["extra_args"] == ["--num_experiment_runs", "3"]
    # The evaluation runs in its own scratch folder, not in the task folder.
    assert result.extra["extra_data"]["cwd"] == str(work_dir.resolve())
    assert result.extra["other_metrics"] == {"execution_time_mean": 0.01}


async def test_text_feedback_list_and_missing_correct_json(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    evaluator = command_evaluator(
        write_file,
        """
metrics = {"combined_score": 3, "text_feedback": ["case 1 ok", "case 2 slow"]}
(results / "metrics.json").write_text(json.dumps(metrics))
""",
    )
    result = await evaluator.evaluate(PROGRAM, work_dir)
    assert result.status == "ok", result.error
    assert result.combined_score == 3.0
    assert result.text_feedback == "case 1 ok\ncase 2 slow"


GARBAGE_CASES = {
    "metrics_not_json": (
        '(results / "metrics.json").write_text("{combined_score: 1")',
        "invalid_output",
        ["metrics.json is not valid JSON", "line 1 column 2"],
    ),
    "metrics_is_a_list": (
        '(results / "metrics.json").write_text("[1, 2]")',
        "invalid_output",
        ["metrics.json must hold a JSON object", "holds an array [1, 2]"],
    ),
    "metrics_missing": (
        'print("forgot to write anything")',
        "invalid_output",
        ["metrics.json was not written"],
    ),
    "score_missing": (
        '(results / "metrics.json").write_text(json.dumps({"public": {"a": 1}}))',
        "invalid_output",
        ["has no 'combined_score' key", "['public']"],
    ),
    "score_nan": (
        '(results / "metrics.json").write_text(json.dumps({"combined_score": float("nan")}))',
        "incorrect",
        ["combined_score in", "metrics.json", "is nan, not a finite number", "no correct.json"],
    ),
    "score_string": (
        '(results / "metrics.json").write_text(json.dumps({"combined_score": "0.9"}))',
        "invalid_output",
        ["combined_score in", 'is a string "0.9"; expected a finite number'],
    ),
    "public_not_a_dict": (
        '(results / "metrics.json").write_text(json.dumps({"combined_score": 1, "public": [1]}))',
        "invalid_output",
        ["'public' in", "must be an object/dict, but is an array [1]"],
    ),
    "correct_false_with_error": (
        '(results / "metrics.json").write_text(json.dumps({"combined_score": 0.9}))\n'
        '(results / "correct.json").write_text('
        'json.dumps({"correct": False, "error": "case 4 wrong"}))',
        "incorrect",
        ["case 4 wrong"],
    ),
    "correct_not_a_bool": (
        '(results / "metrics.json").write_text(json.dumps({"combined_score": 0.9}))\n'
        '(results / "correct.json").write_text(json.dumps({"correct": "yes"}))',
        "invalid_output",
        ["'correct' in", "correct.json must be true or false", 'a string "yes"'],
    ),
}


@pytest.mark.parametrize("case", sorted(GARBAGE_CASES))
async def test_garbage_results_get_the_right_status_and_a_precise_error(
    case: str, write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    body, expected_status, error_parts = GARBAGE_CASES[case]
    result = await command_evaluator(write_file, body).evaluate(PROGRAM, work_dir)
    assert result.status == expected_status, result.error
    assert result.combined_score is None
    for part in error_parts:
        assert part in result.error


async def test_incorrect_keeps_the_reported_score_out_of_combined_score(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    body, _, _ = GARBAGE_CASES["correct_false_with_error"]
    result = await command_evaluator(write_file, body).evaluate(PROGRAM, work_dir)
    assert result.combined_score is None
    assert result.extra["reported_combined_score"] == 0.9
    assert not result.correct


async def test_stale_results_from_an_earlier_run_are_not_reused(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    stale = work_dir / "results" / "metrics.json"
    stale.parent.mkdir(parents=True)
    stale.write_text('{"combined_score": 99}')
    result = await command_evaluator(write_file, "pass").evaluate(PROGRAM, work_dir)
    assert result.status == "invalid_output"
    assert "metrics.json was not written" in result.error
