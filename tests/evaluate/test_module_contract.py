"""The module contract (OpenEvolve style) end to end through ProgramEvaluator."""

from __future__ import annotations

import math
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

PROGRAM = "def solve():\n    return 42\n"


def evaluator_for(path: Path, **overrides: object) -> ProgramEvaluator:
    return ProgramEvaluator(EvaluatorSettings(evaluator_path=path, **overrides))  # type: ignore[arg-type]


LOAD_PROGRAM = """
import importlib.util

def load(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
"""


async def test_public_private_and_feedback_keys_are_honoured(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file(
        "evaluator.py",
        LOAD_PROGRAM
        + """
def evaluate(program_path):
    answer = load(program_path).solve()
    return {
        "combined_score": answer / 100,
        "public": {"answer": answer},
        "private": {"held_out": 0.25},
        "text_feedback": ["first line", "second line"],
    }
""",
    )
    evaluator = evaluator_for(path)
    assert evaluator.contract == "module"
    result = await evaluator.evaluate(PROGRAM, work_dir)
    assert result.status == "ok", result.error
    assert result.combined_score == 0.42
    assert result.public == {"answer": 42}
    assert result.private == {"held_out": 0.25}
    assert result.text_feedback == "first line\nsecond line"
    assert (work_dir / "program.py").read_text() == PROGRAM
    assert result.duration_s > 0


async def test_openevolve_dict_runs_unchanged(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file(
        "evaluator.py",
        """
        def evaluate(program_path):
            return {"score": 0.5, "runs_successfully": 1.0, "combined_score": 0.7}
        """,
    )
    result = await evaluator_for(path).evaluate(PROGRAM, work_dir)
    assert result.status == "ok"
    assert result.combined_score == 0.7
    assert result.public == {"score": 0.5, "runs_successfully": 1.0}
    assert result.private == {}


async def test_missing_combined_score_is_the_mean_of_numeric_metrics(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file(
        "evaluator.py",
        """
        def evaluate(program_path):
            return {"speed": 0.2, "accuracy": 0.6, "passed": True, "label": "fast"}
        """,
    )
    result = await evaluator_for(path).evaluate(PROGRAM, work_dir)
    assert result.status == "ok"
    assert result.combined_score is not None and math.isclose(result.combined_score, 0.4)
    assert result.public == {"speed": 0.2, "accuracy": 0.6}
    assert "mean of ['accuracy', 'speed']" in result.extra["combined_score_source"]
    assert result.extra["other_metrics"] == {"passed": True, "label": "fast"}


async def test_openevolve_result_object_with_artifacts(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file(
        "evaluator.py",
        """
        from dataclasses import dataclass, field

        @dataclass
        class EvaluationResult:
            metrics: dict
            artifacts: dict = field(default_factory=dict)

        def evaluate(program_path):
            return EvaluationResult(
                metrics={"combined_score": 0.9, "accuracy": 0.95},
                artifacts={"stderr": "warning: slow path taken", "attempts": 3},
            )
        """,
    )
    result = await evaluator_for(path).evaluate(PROGRAM, work_dir)
    assert result.status == "ok"
    assert result.combined_score == 0.9
    assert result.public == {"accuracy": 0.95}
    assert result.extra["artifacts"] == {"stderr": "warning: slow path taken", "attempts": 3}
    assert "[artifact stderr]\nwarning: slow path taken" in result.text_feedback


async def test_openevolve_evaluator_importing_its_result_class_runs_unchanged(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file(
        "evaluator.py",
        """
        import importlib.util
        import traceback

        from openevolve.evaluation_result import EvaluationResult

        def evaluate(program_path):
            try:
                spec = importlib.util.spec_from_file_location("program", program_path)
                program = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(program)
                value = program.solve()
            except Exception as error:
                return EvaluationResult(
                    metrics={"combined_score": 0.0, "error": str(error)},
                    artifacts={"traceback": traceback.format_exc()},
                )
            return EvaluationResult(
                metrics={"value_score": value / 42, "combined_score": value / 84},
                artifacts={"stage": "complete"},
            )
        """,
    )
    result = await evaluator_for(path).evaluate(PROGRAM, work_dir)
    assert result.status == "ok", result.error
    assert result.combined_score == 0.5
    assert result.public == {"value_score": 1.0}
    assert result.extra["artifacts"] == {"stage": "complete"}

    failing = await evaluator_for(path).evaluate("def solve():\n    return 1 / 0\n", work_dir)
    assert failing.status == "incorrect"
    assert failing.error == "division by zero"
    assert "ZeroDivisionError" in failing.text_feedback  # the traceback artifact


async def test_numpy_values_are_serialised_and_nan_score_is_never_ok(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file(
        "evaluator.py",
        """
        import numpy as np

        def evaluate(program_path):
            return {
                "combined_score": np.float64("nan"),
                "size": np.int64(7),
                "curve": np.array([1.5, np.inf]),
            }
        """,
    )
    result = await evaluator_for(path).evaluate(PROGRAM, work_dir)
    assert result.status == "incorrect"
    assert result.combined_score is None
    assert "combined_score" in result.error and "nan" in result.error
    assert result.public == {"size": 7}
    assert result.extra["other_metrics"] == {"curve": [1.5, None]}
    assert any("metrics.curve[1] was inf" in note for note in result.extra["notes"])


async def test_correct_false_or_error_key_is_incorrect(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file(
        "evaluator.py",
        """
        def evaluate(program_path):
            return {"combined_score": 0.8, "error": "wrong answer on case 3"}
        """,
    )
    result = await evaluator_for(path).evaluate(PROGRAM, work_dir)
    assert result.status == "incorrect"
    assert result.error == "wrong answer on case 3"
    assert result.combined_score is None
    assert result.extra["reported_combined_score"] == 0.8

    path.write_text(
        "def evaluate(program_path):\n    return {'combined_score': 1.0, 'correct': False}\n"
    )
    result = await evaluator_for(path).evaluate(PROGRAM, work_dir)
    assert result.status == "incorrect"
    assert "correct=False" in result.error


async def test_evaluator_runs_in_its_task_folder(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    write_file("data.txt", "0.75\n")
    write_file("helpers.py", "def scale(value):\n    return value * 2\n")
    path = write_file(
        "evaluator.py",
        """
        from helpers import scale

        def evaluate(program_path):
            with open("data.txt") as handle:
                return {"combined_score": scale(float(handle.read()))}
        """,
    )
    result = await evaluator_for(path).evaluate(PROGRAM, work_dir)
    assert result.status == "ok", result.error
    assert result.combined_score == 1.5


async def test_exception_in_evaluate_is_a_crash_with_the_traceback(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file(
        "evaluator.py",
        """
        def evaluate(program_path):
            raise ValueError("evaluator exploded on purpose")
        """,
    )
    result = await evaluator_for(path).evaluate(PROGRAM, work_dir)
    assert result.status == "crashed"
    assert "raised an exception" in result.error
    assert "ValueError: evaluator exploded on purpose" in result.error
    assert "ValueError: evaluator exploded on purpose" in result.stderr


async def test_non_dict_return_is_invalid_output(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file("evaluator.py", "def evaluate(program_path):\n    return 0.5\n")
    result = await evaluator_for(path).evaluate(PROGRAM, work_dir)
    assert result.status == "invalid_output"
    assert "returned a float (0.5)" in result.error
    assert "expected a dict of metrics" in result.error


async def test_infinite_loop_in_the_program_times_out(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file(
        "evaluator.py",
        LOAD_PROGRAM
        + """
def evaluate(program_path):
    return {"combined_score": load(program_path).solve()}
""",
    )
    looping = "def solve():\n    while True:\n        pass\n"
    result = await evaluator_for(path, timeout_s=3).evaluate(looping, work_dir)
    assert result.status == "timeout"
    assert result.combined_score is None
    assert "wall-clock limit of 3 s" in result.error
    assert 2.5 < result.duration_s < 30


async def test_program_printing_20_mb_is_truncated(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file(
        "evaluator.py",
        LOAD_PROGRAM
        + """
def evaluate(program_path):
    return {"combined_score": load(program_path).solve()}
""",
    )
    chatty = (
        "import sys\n"
        "for _ in range(20):\n"
        "    sys.stdout.write('y' * 1_000_000)\n"
        "def solve():\n"
        "    return 1.0\n"
    )
    tracemalloc.start()
    try:
        result = await evaluator_for(path, max_output_bytes=4_000).evaluate(chatty, work_dir)
        _, peak_traced = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.status == "ok", result.error
    assert result.combined_score == 1.0
    assert result.extra["stdout_truncated_bytes"] == 20_000_000 - 4_000
    assert "bytes of stdout dropped" in result.stdout
    assert len(result.stdout) < 4_000 + 200
    assert peak_traced < 8 * 1024 * 1024
