"""``RayExecutor``: the ``EvaluationExecutor`` that runs evaluations as Ray jobs.

One ``run`` is one evaluation and returns one result, so the loop commits it once; inside, a job
whose worker is lost is resubmitted (``cluster.py``), never counted twice, and one lost more
often than ``execution.max_retries`` allows fails that evaluation alone (``lost_result``). The
driver keeps the store: workers build their evaluator from a plan (``plans.py``) and return
results. A judged task is judged by ``DistributedJudge`` (``judge.py``) on the driver, whose
compilations and case chunks are the jobs.

The worker name stored with an evaluation is ``HOST/NODE`` (the host and the first characters
of the Ray node id); a judged evaluation whose cases ran on several nodes names them all,
comma-separated. A job lost too often names the node Ray says it lost, else ``ray``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import ray

from cambrian.config import ExecutionConfig
from cambrian.core.evaluation import EvaluationResult
from cambrian.evaluate.distributed import worker
from cambrian.evaluate.distributed.cluster import LostAttempt, RayCluster, WorkerLost
from cambrian.evaluate.distributed.judge import DistributedJudge, distributed, workers_seen
from cambrian.evaluate.distributed.plans import judge_of, make_plan
from cambrian.evaluate.executor import EvaluationJob, EvaluationOutcome
from cambrian.evaluate.judge.toolchains import CompileResult

log = logging.getLogger(__name__)
NO_WORKER = "ray"  # an evaluation no job came back from (no case to run, its worker lost)
_NODE_ID = re.compile(r"\bID: ([0-9a-f]{56})\b")  # in Ray's NodeDiedError and OutOfMemoryError


class RayExecutor:
    def __init__(self, evaluator: Any, settings: ExecutionConfig,
                 secret_env: tuple[str, ...] = ()) -> None:
        """``secret_env``: variables holding API keys, withheld on the workers too."""
        self.settings = settings
        self.secret_env = secret_env
        self.cluster = RayCluster(settings)
        gpus = getattr(getattr(evaluator, "settings", None), "gpus", 0)
        # Ray gives each job its own GPUs and sets CUDA_VISIBLE_DEVICES to them.
        self._program = self.cluster.remote(worker.run_program_job,
                                            **({"num_gpus": gpus} if gpus else {}))
        self._compile = self.cluster.remote(worker.compile_job)
        self._chunk = self.cluster.remote(worker.case_chunk_job, scheduling_strategy="SPREAD")
        self._warm_up = self.cluster.remote(worker.warm_up_job, scheduling_strategy="SPREAD")
        self._plan_ref: Any = None
        self.evaluator = evaluator

    # ------------------------------------------------------------------ the evaluator

    @property
    def evaluator(self) -> Any:
        """The driver's form of the evaluator: the task's own, or its judge sent out."""
        return self._driver_form

    @evaluator.setter
    def evaluator(self, evaluator: Any) -> None:
        self._original = evaluator
        self._judged = judge_of(evaluator) is not None
        self._driver_form = distributed(evaluator, self) if self._judged else evaluator
        self._plan_ref = None

    @property
    def lost(self) -> list[LostAttempt]:
        """Every job resubmitted because its worker or node was lost."""
        return self.cluster.lost

    @property
    def compilations(self) -> Counter[str]:
        """A judged task's compiler runs per worker."""
        judge = judge_of(self._driver_form)
        return judge.compilations if isinstance(judge, DistributedJudge) else Counter()

    def _plan(self) -> Any:
        if self._plan_ref is None:
            self.cluster.connect()
            parallel_cases = max(1, int(self.settings.cpus_per_evaluation))
            plan = make_plan(self._original, self.settings.worker_dir, parallel_cases,
                             self.secret_env)
            try:
                self._plan_ref = ray.put(plan)
            except (TypeError, ValueError, AttributeError) as error:  # pickling failed
                raise TypeError(
                    f"the evaluator {type(self._original).__name__} cannot be sent to Ray "
                    f"workers ({error}); a task's own script or judge always can, a custom "
                    "evaluator must be picklable") from error
        return self._plan_ref

    # ------------------------------------------------------------------ EvaluationExecutor

    async def prepare(self) -> None:
        self.cluster.connect()
        prepare = getattr(self._driver_form, "prepare", None)
        if prepare is not None:
            await prepare()
        await self.warm_up()

    async def warm_up(self) -> None:
        """One warm-up job per job slot, at once, so each lands in its own worker process:
        without it, each process imports Cambrian, builds the evaluator and starts its warm
        evaluation worker during its first evaluation (seconds on a small machine, all slots
        at the same moment). A failed warm-up is logged; the evaluation meets the same error."""
        plan = self._plan()
        outcomes = await asyncio.gather(
            *(self.cluster.call(self._warm_up, plan, what="a worker's warm-up")
              for _ in range(self.cluster.job_slots())), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                log.warning("a Ray worker's warm-up failed: %s: %s", type(outcome).__name__,
                            outcome)
                break

    async def run(self, job: EvaluationJob) -> EvaluationOutcome:
        """One evaluation; a job that lost its worker too often fails it (``lost_result``)."""
        plan = self._plan()
        if self._judged:
            with workers_seen() as seen:
                try:
                    result = await self._driver_form.evaluate(job.source, job.work_dir)
                except WorkerLost as lost:
                    result = lost_result(lost)
                    seen.add(lost_node(lost) or NO_WORKER)
            return EvaluationOutcome(result, ",".join(sorted(seen)) or NO_WORKER)
        what = (f"candidate {job.candidate_id}" if job.candidate_id is not None
                else "an evaluation")
        try:
            result, where = await self.cluster.call(self._program, plan, job.source, what=what)
        except WorkerLost as lost:
            return EvaluationOutcome(lost_result(lost), lost_node(lost) or NO_WORKER)
        return EvaluationOutcome(result, where)

    async def close(self) -> None:
        self._plan_ref = None
        self.cluster.close()

    # ------------------------------------------------------------------ CaseDispatch (judge)

    def chunk_count(self, cases: int) -> int:
        return self.settings.case_chunks or self.cluster.job_slots()

    async def compile(self, source: str) -> tuple[CompileResult, str]:
        result: tuple[CompileResult, str] = await self.cluster.call(
            self._compile, self._plan(), source, what="a compilation")
        return result

    async def run_chunk(self, source: str, case_ids: Sequence[str],
                        keep_outputs: bool) -> worker.ChunkResult:
        what = f"cases {case_ids[0]}..{case_ids[-1]}"
        result: worker.ChunkResult = await self.cluster.call(
            self._chunk, self._plan(), source, list(case_ids), keep_outputs, what=what,
            force_cancel=False)
        return result


def lost_result(lost: WorkerLost) -> EvaluationResult:
    """A failed evaluation, so that a candidate that keeps losing its worker fails alone
    instead of ending the run (and ending it again when resumed). A job Ray's OOM killer ended
    used too much memory, as one that hits its memory limit does."""
    times = f"{lost.attempts} time{'s' if lost.attempts > 1 else ''}"
    return EvaluationResult(
        status="memory" if lost.out_of_memory else "crashed",
        error=f"the Ray worker evaluating it was lost {times}; last: {lost.last}")


def lost_node(lost: WorkerLost) -> str | None:
    """The lost job's node, named as ``worker.worker_label`` does, if Ray's error names it."""
    match = _NODE_ID.search(lost.last)
    if match is None:
        return None
    host = next((node.get("NodeManagerHostname") for node in ray.nodes()
                 if node.get("NodeID") == match[1]), None)
    return f"{host}/{match[1][:8]}" if host else None
