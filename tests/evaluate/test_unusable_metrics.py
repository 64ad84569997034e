"""Whatever number, text or nesting an evaluation returns, it maps to a result with a reason:
never to an exception that would end the run (10**400 as a score once did, on every resume).
Real evaluations through ProgramEvaluator, both contracts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

PROGRAM = "def solve():\n    return 42\n"

DEEP = "deep = []\nfor _ in range(100_000):\n    deep = [deep]\n"

# returned value (Python source) -> (status, words the error holds, or None for "ok")
MODULE_CASES: dict[str, tuple[str, str, list[str]]] = {
    "score_10_400": ("{'combined_score': 10**400}", "incorrect",
                     ["combined_score in", "integer of about 401 digits",
                      "too large for a float"]),
    "score_minus_10_400": ("{'combined_score': -10**400}", "incorrect",
                           ["too large for a float"]),
    "score_of_5000_digits": ("{'combined_score': 10**5000}", "incorrect",
                             ["integer of about 5001 digits"]),
    "score_inf": ("{'combined_score': float('inf')}", "incorrect", ["is inf"]),
    "score_nan": ("{'combined_score': float('nan')}", "incorrect", ["is nan"]),
    "score_string": ("{'combined_score': 'high'}", "invalid_output", ['a string "high"']),
    "score_bool": ("{'combined_score': True}", "invalid_output", ["a boolean true"]),
    "mean_of_a_huge_public_metric": ("{'public': {'a': 10**400, 'b': 1}}", "incorrect",
                                     ["not all finite", "too large for a float"]),
    "huge_top_level_metric": ("{'a': 10**400, 'b': 2.0}", "incorrect",
                              ["not all finite", "{'a': 'an integer of about 401 digits"]),
}


def module_evaluator(write_file: Callable[[str, str], Path], returned: str,
                     prelude: str = "") -> ProgramEvaluator:
    path = write_file("evaluator.py", f"{prelude}\ndef evaluate(program_path):\n"
                                      f"    return {returned}\n")
    return ProgramEvaluator(EvaluatorSettings(evaluator_path=path))


@pytest.mark.parametrize("case", sorted(MODULE_CASES))
async def test_an_unusable_score_is_a_failed_result_with_its_reason(
    case: str, write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    returned, status, words = MODULE_CASES[case]
    result = await module_evaluator(write_file, returned).evaluate(PROGRAM, work_dir)
    assert result.status == status, result.error
    assert result.combined_score is None
    for word in words:
        assert word in result.error, (word, result.error)


async def test_huge_numbers_beside_a_good_score_are_stored_as_null_and_noted(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    returned = ("{'combined_score': 0.5, 'public': {'count': 10**400, 'inner': {'x': [10**5000]}},"
                " 'private': {'p': -10**400}, 'deep': deep, 'label': 'text', 'flag': True}")
    result = await module_evaluator(write_file, returned, DEEP).evaluate(PROGRAM, work_dir)
    assert result.status == "ok", result.error
    assert result.combined_score == 0.5
    assert result.public == {"count": None, "inner": {"x": [None]}}
    assert result.private == {"p": None}
    notes = "\n".join(result.extra["notes"])
    assert "metrics.public.count was an integer of about 401 digits" in notes
    assert "nested deeper than 64 levels" in notes
    assert result.extra["other_metrics"]["label"] == "text"


COMMAND_EVALUATOR = """import argparse, pathlib
parser = argparse.ArgumentParser()
parser.add_argument("--program_path")
parser.add_argument("--results_dir")
args = parser.parse_args()
pathlib.Path(args.results_dir, "metrics.json").write_text({text})
"""

# metrics.json's text (a Python expression) -> (status, words the error holds)
COMMAND_CASES: dict[str, tuple[str, str, list[str]]] = {
    "score_of_401_digits": ("'{\"combined_score\": 1' + '0' * 400 + '}'", "incorrect",
                            ["integer of 401 digits (too large for a float)"]),
    "score_of_5001_digits": ("'{\"combined_score\": -1' + '0' * 5000 + '}'", "incorrect",
                             ["integer of 5001 digits"]),
    "score_1e400": ("'{\"combined_score\": 1e400}'", "incorrect", ["is inf"]),
    "nested_100000_deep": ("'{\"combined_score\": 1, \"x\": ' + '[' * 100_000 + ']' * 100_000"
                           " + '}'", "invalid_output", ["nests its JSON too deeply"]),
}


@pytest.mark.parametrize("case", sorted(COMMAND_CASES))
async def test_an_unusable_metrics_json_is_a_failed_result_with_its_reason(
    case: str, write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    text, status, words = COMMAND_CASES[case]
    path = write_file("evaluate.py", COMMAND_EVALUATOR.format(text=text))
    evaluator = ProgramEvaluator(EvaluatorSettings(evaluator_path=path))
    assert evaluator.contract == "command"
    result = await evaluator.evaluate(PROGRAM, work_dir)
    assert result.status == status, result.error
    for word in words:
        assert word in result.error, (word, result.error)


async def test_a_huge_public_metric_in_metrics_json_beside_a_good_score(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    text = "'{\"combined_score\": 2, \"public\": {\"n\": 1' + '0' * 500 + '}}'"
    path = write_file("evaluate.py", COMMAND_EVALUATOR.format(text=text))
    result = await ProgramEvaluator(EvaluatorSettings(evaluator_path=path)).evaluate(
        PROGRAM, work_dir)
    assert result.status == "ok" and result.combined_score == 2.0
    assert result.public == {"n": None}
    assert "metrics.public.n was an integer of 501 digits" in "\n".join(result.extra["notes"])
