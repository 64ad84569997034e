"""Hangs, memory hogs and crashes map to timeout / memory / crashed, for both contracts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

PROGRAM = "def solve():\n    return 1\n"

COMMAND_SHAPE = """
import argparse, ctypes, os, subprocess, sys, time

def main(program_path, results_dir):
BODY

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--program_path")
    parser.add_argument("--results_dir")
    args = parser.parse_args()
    main(args.program_path, args.results_dir)
"""

MODULE_SHAPE = """
import ctypes, os, subprocess, sys, time

def evaluate(program_path):
BODY
    return {"combined_score": 1.0}
"""

SHAPES = {"command": COMMAND_SHAPE, "module": MODULE_SHAPE}


def evaluator_with_body(
    write_file: Callable[[str, str], Path], contract: str, body: str, **overrides: object
) -> ProgramEvaluator:
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    path = write_file(f"{contract}_evaluator.py", SHAPES[contract].replace("BODY", indented))
    evaluator = ProgramEvaluator(EvaluatorSettings(evaluator_path=path, **overrides))  # type: ignore[arg-type]
    assert evaluator.contract == contract
    return evaluator


@pytest.mark.parametrize("contract", ["command", "module"])
async def test_hang_with_grandchild_times_out_and_leaves_no_process(
    contract: str, write_file: Callable[[str, str], Path], work_dir: Path, tmp_path: Path, probe
) -> None:
    marker = f"cambrian-hang-{tmp_path.name}"
    # The evaluation may write only in its scratch folder, its working directory.
    body = f"""
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", {marker!r}])
open("ready", "w").close()
while True:
    time.sleep(1)
"""
    evaluator = evaluator_with_body(write_file, contract, body, timeout_s=4)
    result = await evaluator.evaluate(PROGRAM, work_dir)
    assert result.status == "timeout"
    assert result.combined_score is None
    assert "wall-clock limit of 4 s" in result.error
    assert result.duration_s < 30
    assert (work_dir / "ready").exists()
    assert probe.marked_running_after(marker) == []


@pytest.mark.parametrize("contract", ["command", "module"])
async def test_memory_hog_is_reported_as_memory(
    contract: str, write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    body = "hog = bytearray(2 * 1024**3)"
    evaluator = evaluator_with_body(write_file, contract, body, memory_limit_mb=300)
    result = await evaluator.evaluate(PROGRAM, work_dir)
    assert result.status == "memory"
    assert result.combined_score is None
    assert "memory limit of 300 MB" in result.error
    assert "MemoryError" in result.error


CRASHES = {
    "exception": ('raise RuntimeError("kaboom in evaluator")', "RuntimeError: kaboom in evaluator"),
    "exit_3": ('print("giving up", file=sys.stderr)\nsys.exit(3)', "giving up"),
    "abort": ("os.abort()", "SIGABRT"),
    "segfault": ("ctypes.string_at(0)", "SIGSEGV"),
}


@pytest.mark.parametrize("crash", sorted(CRASHES))
@pytest.mark.parametrize("contract", ["command", "module"])
async def test_crashes_are_reported_with_the_stderr_tail(
    contract: str, crash: str, write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    body, expected_in_error = CRASHES[crash]
    result = await evaluator_with_body(write_file, contract, body).evaluate(PROGRAM, work_dir)
    assert result.status == "crashed", result.error
    assert result.combined_score is None
    assert expected_in_error in result.error
    if crash in ("abort", "segfault"):
        # faulthandler's report points at the evaluator line that died.
        assert "stderr" in result.error and "evaluator.py" in result.error


async def test_exit_code_is_named_for_command_evaluators(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    body, _ = CRASHES["exit_3"]
    result = await evaluator_with_body(write_file, "command", body).evaluate(PROGRAM, work_dir)
    assert "exited with code 3" in result.error
    assert result.stderr == "giving up\n"


async def test_program_calling_sys_exit_in_a_module_evaluator_is_a_crash(
    write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    body = """
import importlib.util
spec = importlib.util.spec_from_file_location("candidate", program_path)
spec.loader.exec_module(importlib.util.module_from_spec(spec))
"""
    evaluator = evaluator_with_body(write_file, "module", body)
    result = await evaluator.evaluate("import sys\nsys.exit(0)\n", work_dir)
    assert result.status == "crashed"
    assert "SystemExit: 0" in result.error
