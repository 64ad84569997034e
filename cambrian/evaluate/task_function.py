"""A function of a task file called contained: task code (a decomposition's combiner, say)
runs in the sandbox like every evaluator, never in Cambrian's process (`task_call.py`)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from cambrian.evaluate.sandbox import run_sandboxed

TASK_CALL_PATH = Path(__file__).with_name("task_call.py")
# What task_call.py and judge/score_call.py load by path: the sandbox must let them read it.
FILE_CALL_PATH = Path(__file__).with_name("file_call.py")


class TaskFunctionFailed(Exception):
    """The task's function raised, ran out of time or printed no answer."""


async def call_task_function(path: Path, function: str, argument: Any, *, work_dir: Path,
                             timeout_s: float = 60.0, memory_limit_mb: int | None = 2048) -> Any:
    """``function(argument)`` of the task file ``path``, run contained in ``work_dir`` (a
    scratch folder, emptied first); its JSON reply, or TaskFunctionFailed saying why."""
    shutil.rmtree(work_dir, ignore_errors=True)
    work_dir.mkdir(parents=True)
    copy = work_dir / path.name
    shutil.copyfile(path, copy)
    (work_dir / "argument.json").write_text(json.dumps(argument), encoding="utf-8")
    result = await run_sandboxed(
        [sys.executable, str(TASK_CALL_PATH), str(copy), function, str(work_dir / "argument.json")],
        cwd=work_dir, env=None, timeout_s=timeout_s, memory_limit_mb=memory_limit_mb,
        scratch_dir=work_dir, max_output_bytes=4_000_000, read_only_paths=[FILE_CALL_PATH])
    if result.timed_out:
        raise TaskFunctionFailed(f"{path.name}: {function}() ran past {timeout_s:g} s")
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not ("reply" in answer or "raised" in answer):
        detail = result.stderr.strip()[-600:] or f"exit code {result.returncode}"
        raise TaskFunctionFailed(f"{path.name}: {function}() gave no answer ({detail})")
    if "raised" in answer:
        raise TaskFunctionFailed(f"{path.name}: {function}() raised {answer['raised']}")
    return answer["reply"]
