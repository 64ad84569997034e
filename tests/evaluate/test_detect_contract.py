"""detect_contract reads an evaluator's shape from its AST, without running it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cambrian.evaluate.contracts import detect_contract
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator


def test_top_level_evaluate_is_the_module_contract(write_file: Callable[[str, str], Path]) -> None:
    path = write_file(
        "evaluator.py",
        """
        import sys
        sys.exit("must never run: detection only parses")

        def helper(results):
            return results

        def evaluate(program_path, *, repeats=3):
            return {"combined_score": 1.0}
        """,
    )
    assert detect_contract(path) == "module"


def test_async_evaluate_counts_too(write_file: Callable[[str, str], Path]) -> None:
    path = write_file("evaluator.py", "async def evaluate(program_path):\n    return {}\n")
    assert detect_contract(path) == "module"


def test_argparse_results_dir_is_the_command_contract(
    write_file: Callable[[str, str], Path],
) -> None:
    path = write_file(
        "evaluate.py",
        """
        import argparse

        def evaluate(program_path):  # a helper; the CLI shape wins
            return {}

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--program_path")
            parser.add_argument("--results_dir")
        """,
    )
    assert detect_contract(path) == "command"


def test_main_with_results_dir_is_the_command_contract(
    write_file: Callable[[str, str], Path],
) -> None:
    path = write_file(
        "evaluate.py",
        """
        def main(program_path: str, results_dir: str) -> None:
            pass
        """,
    )
    assert detect_contract(path) == "command"


@pytest.mark.parametrize(
    "source",
    [
        "def evaluate():\n    return {}\n",  # no positional parameter
        "def evaluate(program_path, results_dir):\n    return {}\n",  # wants a results dir, no CLI
        "def score(program_path):\n    return {}\n",  # no evaluate at all
        # not at top level:
        "class Evaluator:\n    def evaluate(self, program_path):\n        return {}\n",
    ],
)
def test_neither_shape_explains_both(write_file: Callable[[str, str], Path], source: str) -> None:
    path = write_file("evaluator.py", source)
    with pytest.raises(ValueError) as raised:
        detect_contract(path)
    message = str(raised.value)
    assert "matches neither evaluator shape" in message
    assert "def evaluate(program_path)" in message
    assert "--results_dir" in message and "metrics.json" in message


def test_syntax_error_names_the_line_and_both_shapes(
    write_file: Callable[[str, str], Path],
) -> None:
    path = write_file("evaluator.py", "def evaluate(program_path):\n    return {\n")
    with pytest.raises(ValueError) as raised:
        detect_contract(path)
    message = str(raised.value)
    assert "cannot parse evaluator" in message and "line" in message
    assert "def evaluate(program_path)" in message and "--results_dir" in message


def test_program_evaluator_detects_or_accepts_an_explicit_contract(
    write_file: Callable[[str, str], Path],
) -> None:
    path = write_file("evaluator.py", "def evaluate(program_path):\n    return {}\n")
    assert ProgramEvaluator(EvaluatorSettings(evaluator_path=path)).contract == "module"
    explicit = ProgramEvaluator(EvaluatorSettings(evaluator_path=path, contract="command"))
    assert explicit.contract == "command"
    with pytest.raises(ValueError, match="contract must be"):
        ProgramEvaluator(EvaluatorSettings(evaluator_path=path, contract="shell"))  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        ProgramEvaluator(EvaluatorSettings(evaluator_path=path.with_name("missing.py")))
