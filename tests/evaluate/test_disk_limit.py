"""The per-evaluation disk quota (`evaluation.disk_limit_mb`): an evaluation that writes more than
its limit into its scratch folder, in many files or in files it deleted but keeps open, is
killed and fails with status "disk"; what it wrote is removed. What the folder held before
(the task's own files) does not count."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cambrian.config.loading import build_config
from cambrian.evaluate.containment import ContainmentPolicy
from cambrian.evaluate.factory import build_evaluator
from cambrian.evaluate.judge.verdicts import RunLimits, Verdict, classify_run
from cambrian.evaluate.runner import EvaluatorSettings
from cambrian.evaluate.sandbox import run_sandboxed
from cambrian.store.store import Store
from cambrian.task.folder import load_task

MODULE_EVALUATOR = """
import importlib.util

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return {"combined_score": 1.0}
"""

# 48 files of 4 MB: 192 MB, three times the 64 MB limit, none near the per-file cap. A fast disk
# writes it all within one sampling interval (0.1 s), so the program then waits: the watch must
# kill it while it runs, not only fail it once it has ended.
MANY_FILES = """
import os, time
os.makedirs("out", exist_ok=True)
chunk = os.urandom(1 << 20)
for index in range(48):
    with open(f"out/part{index}.bin", "wb") as handle:
        for _ in range(4):
            handle.write(chunk)
time.sleep(5)
print("wrote everything")
"""

# Files that no folder holds any more, kept open: no walk of the folder finds them.
DELETED_BUT_OPEN = """
import os, time
chunk = os.urandom(1 << 20)
kept = []
for index in range(24):
    handle = open(f"hidden{index}.bin", "wb")
    os.unlink(f"hidden{index}.bin")
    for _ in range(8):
        handle.write(chunk)
    handle.flush()
    kept.append(handle)
time.sleep(5)
print("wrote everything")
"""


def written_files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()]


async def test_many_files_over_the_limit_fail_the_evaluation_and_are_removed(
        make_evaluator: Callable[..., Any], write_file: Callable[[str, str], Path],
        work_dir: Path) -> None:
    evaluator = make_evaluator(EvaluatorSettings(
        evaluator_path=write_file("evaluate.py", MODULE_EVALUATOR), disk_limit_mb=64))
    result = await evaluator.evaluate(MANY_FILES, work_dir)
    assert result.status == "disk", (result.status, result.error)
    assert "disk limit of 64 MB" in result.error and "evaluation.disk_limit_mb" in result.error
    assert "wrote everything" not in result.stdout
    assert written_files(work_dir) == []  # the folder was emptied


async def test_deleted_files_kept_open_count_against_the_limit(
        make_evaluator: Callable[..., Any], write_file: Callable[[str, str], Path],
        work_dir: Path) -> None:
    evaluator = make_evaluator(EvaluatorSettings(
        evaluator_path=write_file("evaluate.py", MODULE_EVALUATOR), disk_limit_mb=64))
    result = await evaluator.evaluate(DELETED_BUT_OPEN, work_dir)
    assert result.status == "disk", (result.status, result.error)
    assert "wrote everything" not in result.stdout


async def test_the_task_files_copied_in_do_not_count(
        make_evaluator: Callable[..., Any], write_file: Callable[[str, str], Path],
        task_dir: Path, work_dir: Path) -> None:
    """A 48 MB data file in the task folder, a 32 MB limit, 16 MB written: the evaluation runs."""
    (task_dir / "data.bin").write_bytes(b"\1" * (48 << 20))
    evaluator = make_evaluator(EvaluatorSettings(
        evaluator_path=write_file("evaluate.py", MODULE_EVALUATOR), disk_limit_mb=32))
    code = "open('mine.bin', 'wb').write(b'x' * (16 << 20))\nprint('wrote everything')"
    result = await evaluator.evaluate(code, work_dir)
    assert result.status == "ok", result.error
    assert "wrote everything" in result.stdout
    assert (work_dir / "mine.bin").stat().st_size == 16 << 20


async def test_the_configured_limit_reaches_a_command_evaluator(tmp_path: Path) -> None:
    """`evaluation.disk_limit_mb` from the run's config, a command-contract evaluator that
    writes many files itself; the default limit is 2048 MB."""
    assert build_config([], []).evaluation.disk_limit_mb == 2048
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (task_dir / "initial.py").write_text("# EVOLVE-BLOCK-START\nX = 1\n# EVOLVE-BLOCK-END\n")
    (task_dir / "evaluate.py").write_text(
        "import argparse, json, os\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--program_path')\nparser.add_argument('--results_dir')\n"
        "args = parser.parse_args()\n" + MANY_FILES +
        "json.dump({'combined_score': 1.0}, open(os.path.join(args.results_dir, "
        "'metrics.json'), 'w'))\n")
    config = build_config([], ["evaluation.disk_limit_mb=64", "evaluation.contract=command"])
    store = Store.open(tmp_path / "run", create=True)
    try:
        evaluator = build_evaluator(load_task(task_dir, config), config, tmp_path / "run", store)
        try:
            result = await evaluator.evaluate("X = 1\n", tmp_path / "work")
        finally:
            await evaluator.close()
    finally:
        store.close()
    assert result.status == "disk", (result.status, result.error)
    assert "evaluator evaluate.py wrote more than the disk limit of 64 MB" in result.error
    assert written_files(tmp_path / "work") == []


async def test_a_judged_run_over_the_disk_limit_is_an_output_limit_verdict(
        tmp_path: Path) -> None:
    scratch = tmp_path / "case"
    run = await run_sandboxed(
        [sys.executable, "-c", MANY_FILES], cwd=scratch, env=None, timeout_s=30,
        memory_limit_mb=None, scratch_dir=scratch,
        containment=ContainmentPolicy(disk_limit_mb=64))
    assert run.disk_exceeded and run.disk_limit_mb == 64
    verdict = classify_run(run, RunLimits(time_limit_s=10, wall_limit_s=30, memory_limit_mb=512,
                                          max_output_bytes=1 << 20))
    assert verdict is not None and verdict[0] is Verdict.OLE
    assert "disk limit of 64 MB" in verdict[1]
