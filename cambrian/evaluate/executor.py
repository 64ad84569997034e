"""Where evaluations run: the seam between the loop and the machines that evaluate.

The loop hands an :class:`EvaluationJob` to an :class:`EvaluationExecutor` and gets back the
result and the name of the worker that produced it. :class:`LocalExecutor` (the default) runs
the task's evaluator in this process's sandboxed subprocesses; a distributed executor (Ray)
implements the same protocol. The store stays single-writer: executors only return results.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from cambrian.core.evaluation import EvaluationResult

LOCAL_WORKER = "local"


@runtime_checkable
class Evaluator(Protocol):
    """A task's evaluator: runs one program, returns its verdict. It may also define
    ``async prepare()`` (e.g. generate a judged task's cases, failing fast)."""

    async def evaluate(self, source: str, work_dir: Path) -> EvaluationResult: ...


@dataclass(frozen=True)
class EvaluationJob:
    source: str
    work_dir: Path  # a scratch folder of the run, removed by the caller afterwards
    candidate_id: int | None = None  # None for tune trials and first-program checks


@dataclass(frozen=True)
class EvaluationOutcome:
    result: EvaluationResult
    worker: str = LOCAL_WORKER


class EvaluationExecutor(Protocol):
    evaluator: Evaluator  # the task's evaluator as built here (read for its task facts)

    async def prepare(self) -> None: ...

    async def run(self, job: EvaluationJob) -> EvaluationOutcome: ...

    async def close(self) -> None: ...


class LocalExecutor:
    """Runs evaluations in this process (each in its own sandboxed subprocesses)."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator

    async def prepare(self) -> None:
        prepare = getattr(self.evaluator, "prepare", None)
        if prepare is not None:
            await prepare()

    async def run(self, job: EvaluationJob) -> EvaluationOutcome:
        return EvaluationOutcome(await self.evaluator.evaluate(job.source, job.work_dir))

    async def close(self) -> None:
        close = getattr(self.evaluator, "close", None)  # e.g. end a warm evaluation worker
        if close is not None:
            await close()
