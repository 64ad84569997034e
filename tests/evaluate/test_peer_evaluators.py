"""Peers' evaluators run unchanged and mean what their users mean: OpenEvolve's cascade
(evaluate_stage1/2 with thresholds), artifacts (in an EvaluationResult or a returned dict) fed
back as feedback, validity 0 as a failed program with the output that says why; ShinkaEvolve's
``from shinka.core import run_shinka_eval`` with its scoring; another interpreter."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

import pytest

from cambrian.evaluate.missing_module import missing_module
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peer_folders"
COUNTER = (PEERS / "openevolve_cascade" / "initial_program.py").read_text()
SUMS = (PEERS / "shinka_style" / "initial.py").read_text()


def folder(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(PEERS / name, tmp_path / name))


def counter_evaluator(tmp_path: Path, **settings: object) -> ProgramEvaluator:
    root = folder("openevolve_cascade", tmp_path)
    return ProgramEvaluator(EvaluatorSettings(  # type: ignore[arg-type]
        evaluator_path=root / "evaluator.py", cwd=root, **settings))


def with_value(value: str) -> str:
    return COUNTER.replace("VALUE = 1", f"VALUE = {value}")


async def test_a_cascade_stopped_at_stage1_keeps_stage1s_score(tmp_path: Path):
    evaluator = counter_evaluator(tmp_path, cascade_thresholds=(0.5, 0.75))
    result = await evaluator.evaluate(COUNTER, tmp_path / "work")
    assert result.status == "ok" and result.combined_score == pytest.approx(0.1)
    assert result.extra["cascade"] == {"stopped_after": "stage1", "score": 0.1, "threshold": 0.5}
    assert [stage["stage"] for stage in result.extra["stages"]] == ["stage1"]
    assert "[artifact quick_check]\nstage 1 saw VALUE=1" in result.text_feedback
    assert "stopped after stage1" in result.text_feedback


async def test_a_cascade_past_its_threshold_merges_both_stages(tmp_path: Path):
    evaluator = counter_evaluator(tmp_path, cascade_thresholds=(0.5, 0.75))
    result = await evaluator.evaluate(with_value("6"), tmp_path / "work")
    assert result.status == "ok" and result.combined_score == pytest.approx(0.6)
    assert result.extra["cascade"] == {"completed": 2}
    stages = result.extra["stages"]
    assert [(s["stage"], s["status"], s["combined_score"]) for s in stages] == [
        ("stage1", "ok", 0.6), ("stage2", "ok", 0.6)]
    # Artifacts of both stages, the EvaluationResult's and the dict's, reach the feedback.
    assert result.extra["artifacts"] == {"quick_check": "stage 1 saw VALUE=6",
                                         "full_check": "stage 2 saw VALUE=6", "headroom": 4}
    for text in ("[artifact quick_check]", "[artifact full_check]", "[artifact headroom]\n4"):
        assert text in result.text_feedback


async def test_a_warm_cascade_runs_its_stages_as_a_cold_one(tmp_path: Path):
    """The warm worker's server loads cascade_stages.py and compiles module_runner.py once;
    the stages, their merge and the stop are the cold evaluation's."""
    evaluator = counter_evaluator(tmp_path, cascade_thresholds=(0.5, 0.75), warm_worker=True)
    try:
        stopped = await evaluator.evaluate(COUNTER, tmp_path / "work1")
        merged = await evaluator.evaluate(with_value("6"), tmp_path / "work2")
    finally:
        await evaluator.close()
    assert evaluator.warm is not None and evaluator.warm.disabled is None
    assert evaluator.warm.started == 2  # both forked from the warm worker, none run cold
    assert stopped.extra["cascade"] == {"stopped_after": "stage1", "score": 0.1, "threshold": 0.5}
    assert merged.extra["cascade"] == {"completed": 2}
    assert [(s["stage"], s["combined_score"]) for s in merged.extra["stages"]] == [
        ("stage1", 0.6), ("stage2", 0.6)]


async def test_cascade_off_runs_evaluate_only(tmp_path: Path):
    evaluator = counter_evaluator(tmp_path, cascade="off")
    result = await evaluator.evaluate(with_value("6"), tmp_path / "work")
    assert result.status == "ok" and "stages" not in result.extra
    assert "quick_check" not in result.extra["artifacts"]


async def test_validity_zero_is_a_failure_whose_traceback_reaches_the_error(tmp_path: Path):
    # OpenEvolve's circle packing evaluator reports a crashed program as validity 0 and no error.
    evaluator = counter_evaluator(tmp_path, cascade="off")
    result = await evaluator.evaluate(with_value("undefined_name"), tmp_path / "work")
    assert result.status == "incorrect" and result.combined_score is None
    assert result.error.startswith("evaluator reported validity=0.0")
    assert "NameError: name 'undefined_name' is not defined" in result.error
    assert result.extra["reported_combined_score"] == 0.0


async def test_artifacts_in_a_returned_dict_are_artifacts(tmp_path: Path):
    evaluator = counter_evaluator(tmp_path, cascade="off")
    result = await evaluator.evaluate(with_value("12"), tmp_path / "work")
    assert result.status == "incorrect"  # validity 0: VALUE outside 0..10
    assert result.extra["artifacts"] == {"why": "VALUE 12 is outside 0..10"}
    assert "artifacts" not in result.extra.get("other_metrics", {})
    assert "[artifact why]\nVALUE 12 is outside 0..10" in result.text_feedback


async def test_a_failing_stage1_is_the_programs_error(tmp_path: Path):
    evaluator = counter_evaluator(tmp_path)
    result = await evaluator.evaluate(with_value("undefined_name"), tmp_path / "work")
    assert result.status == "incorrect"
    assert "NameError" in result.error and result.error.startswith("stage 1:")
    assert result.extra["stages"][0]["status"] == "incorrect"


# OpenEvolve's moe_lb shape: a dataclass turned into a dict whose combined_score is a tuple
# (mean_score, speedup), with validity, a summary, nested metrics and artifacts.
TUPLE_SCORE_EVALUATOR = """
import importlib.util

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    ok = program.LOAD <= 10
    return {
        "validity": 1 if ok else 0,
        "combined_score": (0.9, 12.5) if ok else (0.0, 0.0),
        "summary": "balanced" if ok else "overloaded",
        "metrics": {"score": {"mean": 0.9, "std": 0.01}, "completed_runs": 5},
        "artifacts": {"test_case_name": "Dynamic_Avg_5_Runs"},
    }
"""


async def test_a_tuple_combined_score_ranks_by_the_other_numeric_metrics_as_openevolve(
        write_file: Callable[[str, str], Path], work_dir: Path):
    path = write_file("evaluator.py", TUPLE_SCORE_EVALUATOR)
    evaluator = ProgramEvaluator(EvaluatorSettings(evaluator_path=path))
    result = await evaluator.evaluate("LOAD = 3\n", work_dir)
    # OpenEvolve's get_fitness_score cannot read (0.9, 12.5) as a number and averages the
    # other numeric metrics: here validity alone.
    assert result.status == "ok", result.error
    assert result.combined_score == pytest.approx(1.0)
    assert result.extra["reported_combined_score"] == [0.9, 12.5]
    assert "combined_score [0.9, 12.5] is not a number" in result.extra["combined_score_source"]
    assert "mean of ['validity']" in result.extra["combined_score_source"]
    assert "[artifact test_case_name]\nDynamic_Avg_5_Runs" in result.text_feedback


async def test_a_tuple_combined_score_with_validity_zero_is_a_failure(
        write_file: Callable[[str, str], Path], work_dir: Path):
    path = write_file("evaluator.py", TUPLE_SCORE_EVALUATOR)
    evaluator = ProgramEvaluator(EvaluatorSettings(evaluator_path=path))
    result = await evaluator.evaluate("LOAD = 30\n", work_dir)
    assert result.status == "incorrect" and result.combined_score is None
    assert result.error.startswith("evaluator reported validity=0")


async def test_a_tuple_combined_score_and_nothing_else_numeric_is_rejected(
        write_file: Callable[[str, str], Path], work_dir: Path):
    path = write_file("evaluator.py", """
def evaluate(program_path):
    return {"combined_score": [0.5, 2.0], "summary": "no other number"}
""")
    result = await ProgramEvaluator(EvaluatorSettings(evaluator_path=path)).evaluate(
        "x = 1\n", work_dir)
    assert result.status == "invalid_output"
    assert "is not a number" in result.error and "there are none" in result.error


# ------------------------------------------------------------------------------ ShinkaEvolve


def shinka_evaluator(tmp_path: Path, **settings: object) -> ProgramEvaluator:
    root = folder("shinka_style", tmp_path)
    return ProgramEvaluator(EvaluatorSettings(  # type: ignore[arg-type]
        evaluator_path=root / "evaluate.py", cwd=root, **settings))


async def test_run_shinka_eval_scores_as_shinkaevolve(tmp_path: Path):
    evaluator = shinka_evaluator(tmp_path)
    assert evaluator.contract == "command"
    result = await evaluator.evaluate(SUMS, tmp_path / "work")
    # Three runs with seeds 1, 2, 3: sums 4, 5, 6; their mean is the score.
    assert result.status == "ok", result.error
    assert result.combined_score == pytest.approx(5.0)
    assert result.public == {"sums": [4, 5, 6]} and result.private == {"limit": 100}
    assert result.text_feedback == "mean sum 5.00"
    others = result.extra["other_metrics"]
    assert others["num_valid_runs"] == 3 and others["num_invalid_runs"] == 0
    assert others["all_validation_errors"] == []
    assert {"execution_time_mean", "execution_time_std"} <= set(others)
    written = json.loads((tmp_path / "work" / "results" / "correct.json").read_text())
    assert written == {"correct": True, "error": None}


async def test_run_shinka_eval_validation_failure_is_incorrect(tmp_path: Path):
    evaluator = shinka_evaluator(tmp_path)
    result = await evaluator.evaluate(SUMS.replace("[seed, 1, 2]", "[seed, 98]"),
                                      tmp_path / "work")
    # Runs 2 and 3 exceed the limit (100, 101): the first message is the error.
    assert result.status == "incorrect"
    assert result.error == "Validation failed: sum 101 exceeds 100"
    assert result.extra["other_metrics"]["num_invalid_runs"] == 1


async def test_run_shinka_eval_program_crash_uses_the_default_error_metrics(tmp_path: Path):
    evaluator = shinka_evaluator(tmp_path)
    result = await evaluator.evaluate(SUMS.replace("return [seed, 1, 2]", "return 1 / 0"),
                                      tmp_path / "work")
    assert result.status == "incorrect" and result.error == "division by zero"
    assert result.extra["reported_combined_score"] == 0.0


# ------------------------------------------------------------------ another interpreter


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv with nothing installed: no numpy, no cambrian, no shinka."""
    target = tmp_path_factory.mktemp("bare") / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(target)
    return target / "bin" / "python"


async def test_evaluation_python_runs_the_evaluator_under_that_interpreter(
        bare_python: Path, write_file: Callable[[str, str], Path], work_dir: Path):
    path = write_file("evaluator.py", """
import sys

def evaluate(program_path):
    try:
        import numpy  # noqa: F401
        has_numpy = 1.0
    except ImportError:
        has_numpy = 0.0
    return {"combined_score": 1.0, "has_numpy": has_numpy, "prefix": sys.prefix}
""")
    evaluator = ProgramEvaluator(EvaluatorSettings(evaluator_path=path, python=str(bare_python)))
    result = await evaluator.evaluate("x = 1\n", work_dir)
    assert result.status == "ok", result.error
    assert result.extra["other_metrics"]["prefix"] == str(bare_python.parent.parent)
    assert result.public["has_numpy"] == 0.0


async def test_shinka_helper_works_under_a_bare_interpreter(bare_python: Path, tmp_path: Path):
    evaluator = shinka_evaluator(tmp_path, python=str(bare_python))
    result = await evaluator.evaluate(SUMS, tmp_path / "work")
    assert result.status == "ok", result.error
    assert result.combined_score == pytest.approx(5.0)


async def test_a_module_the_evaluator_cannot_import_is_named(
        write_file: Callable[[str, str], Path], work_dir: Path):
    path = write_file("evaluator.py", """
import not_installed_anywhere_xyz

def evaluate(program_path):
    return {"combined_score": 1.0}
""")
    result = await ProgramEvaluator(EvaluatorSettings(evaluator_path=path)).evaluate(
        "x = 1\n", work_dir)
    assert result.status == "crashed"
    assert missing_module(result) == "not_installed_anywhere_xyz"


def test_the_bare_interpreter_really_lacks_numpy(bare_python: Path):
    probe = subprocess.run([str(bare_python), "-c", "import numpy"], capture_output=True, check=False)
    assert probe.returncode != 0 and sys.executable != str(bare_python)
