"""What runs inside a Ray worker process: build the plan's evaluator once, run one job.

Every job gets its own scratch folder under the node's folder (``execution.worker_dir``, default
TMPDIR/cambrian-ray, one subfolder per Ray node), removed afterwards; the evaluator applies the
same sandbox, limits and containment there as a local evaluation does in the run folder. A
judged task's compile cache and generated cases live in the node folder too, shared by the
node's worker processes: a program is compiled once per node (a file lock per source hash keeps
two case chunks of one candidate from compiling it twice).

The functions here are plain; the executor wraps them with ``ray.remote``. They never touch the
run's store: the driver commits what they return.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import logging
import os
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.core.evaluation import EvaluationResult
from cambrian.evaluate.child_env import register_secret_values
from cambrian.evaluate.devices import visible_gpus
from cambrian.evaluate.distributed.bundle import check_copy
from cambrian.evaluate.distributed.plans import JudgePlan, ObjectPlan, Plan, ProgramPlan
from cambrian.evaluate.judge.evaluator import CaseBatch, JudgedEvaluator
from cambrian.evaluate.judge.factory import build_judged_evaluator
from cambrian.evaluate.judge.toolchains import CompileResult
from cambrian.evaluate.runner import ProgramEvaluator

WORKER_DIRNAME = "cambrian-ray"
_built: dict[str, Any] = {}  # plan key -> evaluator, per worker process (one plan at most)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkResult:
    batch: CaseBatch
    compiled_here: bool  # this job compiled the program (a cache miss on its node)
    worker: str


class CompileFailedOnWorker(RuntimeError):
    """A program the driver's first compilation accepted failed to compile on this node."""


def node_id() -> str:
    import ray

    return str(ray.get_runtime_context().get_node_id())


def worker_label() -> str:
    """Where a job ran, as stored in ``evaluations.worker``: host name and Ray node."""
    return f"{socket.gethostname()}/{node_id()[:8]}"


def node_folder(worker_dir: str | None) -> Path:
    root = Path(worker_dir) if worker_dir else Path(tempfile.gettempdir()) / WORKER_DIRNAME
    return root.resolve() / node_id()[:16]


def evaluator_of(plan: Plan) -> Any:
    """The plan's evaluator, built at its first job in this process. Only the latest plan's
    is kept: a driver sends a new plan when its evaluator changes, and an evaluator left
    behind would keep its warm worker's fork server running until this process exits."""
    key = plan.setup.key
    if key not in _built:
        _close_built()
        register_secret_values(os.environ.get(name) for name in plan.setup.secret_env)
        _built[key] = _build(plan)
    return _built[key]


def _close_built() -> None:
    while _built:
        key, evaluator = _built.popitem()
        try:
            asyncio.run(_close(evaluator))
        except Exception:  # an evaluator no longer used: never the next job's failure
            log.warning("closing the evaluator of plan %s failed", key, exc_info=True)


async def _close(evaluator: Any) -> None:
    close = getattr(evaluator, "close", None)  # e.g. end a warm evaluation worker
    if close is not None:
        await close()


def _build(plan: Plan) -> Any:
    if isinstance(plan, ObjectPlan):
        return plan.evaluator
    copy = plan.bundle.materialize(node_folder(plan.setup.worker_dir) / "tasks")
    if isinstance(plan, ProgramPlan):
        settings = dataclasses.replace(plan.settings, evaluator_path=copy / plan.evaluator_relative,
                                       cwd=copy, python=sys.executable)
        evaluator = ProgramEvaluator(settings)
        check_copy(plan.bundle, evaluator.task_files)
        return evaluator
    node = node_folder(plan.setup.worker_dir)
    return build_judged_evaluator(copy, plan.judge, run_dir=node, task_direction=plan.direction,
                                  compile_cache_dir=node / "compile_cache",
                                  case_cache_dir=node / "case_cache")


@contextlib.contextmanager
def _scratch(plan: Plan) -> Iterator[Path]:
    folder = node_folder(plan.setup.worker_dir) / "jobs" / uuid.uuid4().hex
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def warm_up_job(plan: Plan) -> str:
    """Get this worker process ready before its first evaluation: import what a job runs, build
    the plan's evaluator and start its warm evaluation worker (`warm_worker.py`), so the first
    evaluations do not pay for them; where it ran."""
    evaluator = evaluator_of(plan)
    warm = getattr(evaluator, "warm", None)
    if warm is not None:
        asyncio.run(warm.ensure())
    return worker_label()


def run_program_job(plan: Plan, source: str) -> tuple[EvaluationResult, str]:
    """One whole evaluation (a ProgramPlan's or ObjectPlan's evaluator) and where it ran."""
    evaluator = evaluator_of(plan)
    pin_gpus = getattr(evaluator, "pin_gpus", None)
    if pin_gpus is not None:
        pin_gpus(visible_gpus())  # Ray set CUDA_VISIBLE_DEVICES to this job's GPUs
    with _scratch(plan) as folder:
        result = asyncio.run(evaluator.evaluate(source, folder))
    return result, worker_label()


async def compile_once(judge: JudgedEvaluator, source: str) -> CompileResult:
    """The judge's compilation, at most one per source hash on this node at a time."""
    cache = judge.compile_cache
    key = await asyncio.to_thread(cache.key, source, judge.toolchain)
    cache.cache_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(cache.cache_dir / f".lock-{key[:32]}", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
        return await judge.compile(source)
    finally:
        os.close(fd)  # releases the lock


def compile_job(plan: JudgePlan, source: str) -> tuple[CompileResult, str]:
    judge: JudgedEvaluator = evaluator_of(plan)
    return asyncio.run(compile_once(judge, source)), worker_label()


def case_chunk_job(plan: JudgePlan, source: str, case_ids: Sequence[str],
                   keep_outputs: bool) -> ChunkResult:
    """Some of a candidate's cases, judged by the node's judge (same runs, same verdicts)."""
    judge: JudgedEvaluator = evaluator_of(plan)
    by_id = {case.case_id: case for case in (*judge.task.public, *judge.task.private)}
    cases = [by_id[case_id] for case_id in case_ids]

    async def judged(folder: Path) -> ChunkResult:
        compiled = await compile_once(judge, source)
        if not compiled.ok:
            raise CompileFailedOnWorker(f"{worker_label()}: {compiled.error}")
        batch = await judge.run_cases(compiled, cases, folder, keep_outputs=keep_outputs)
        return ChunkResult(batch, not compiled.cache_hit, worker_label())

    with _scratch(plan) as folder:
        folder.mkdir(parents=True)
        return asyncio.run(judged(folder))
