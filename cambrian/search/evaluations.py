"""Evaluating a pending child: skip a program the run already evaluated (or is evaluating), let
the hooks screen it, run it on the executor in a scratch folder, commit the result."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from cambrian.core.evaluation import EvaluationResult
from cambrian.core.events import EvaluationStarted
from cambrian.core.hooks import LoopHook
from cambrian.core.outcomes import RunOutcome
from cambrian.evaluate.executor import EvaluationExecutor, EvaluationJob, EvaluationOutcome
from cambrian.evaluate.task_files import TaskFilesChanged
from cambrian.search.commit import Committer
from cambrian.search.context import RunAborted, RunContext
from cambrian.search.environment_watch import EnvironmentWatch
from cambrian.store.candidates import source_hash
from cambrian.store.rows import CandidateRow


class EvaluationQueue:
    def __init__(self, ctx: RunContext, executor: EvaluationExecutor, committer: Committer,
                 hooks: list[LoopHook], watch: EnvironmentWatch | None = None) -> None:
        """``watch``: told of every committed evaluation; it stops the run when the first few
        all failed because of the evaluation environment."""
        self.ctx = ctx
        self.executor = executor
        self.committer = committer
        self.hooks = hooks
        self.watch = watch
        self._in_flight: dict[str, asyncio.Future[EvaluationResult]] = {}

    async def evaluate(self, row: CandidateRow) -> None:
        assert row.source is not None
        store = self.ctx.store
        digest = row.source_hash or source_hash(row.source)
        earlier = store.candidates.find_evaluated(digest)
        if earlier is None and digest in self._in_flight:
            await asyncio.shield(self._in_flight[digest])
            earlier = store.candidates.find_evaluated(digest)
        if earlier is not None and earlier.id != row.id:
            self.committer.duplicate(row, earlier)
            return
        future: asyncio.Future[EvaluationResult] = asyncio.get_running_loop().create_future()
        self._in_flight[digest] = future
        work_dir = self.ctx.work_root / str(row.id)
        try:
            for hook in self.hooks:
                reason = await hook.screen(row.source, row.parent_id, work_dir)
                if reason is not None:
                    self.committer.screened_out(row, reason)
                    future.cancel()
                    return
            self.ctx.recorder.emit(EvaluationStarted(candidate_id=row.id))
            try:
                outcome = await self.executor.run(EvaluationJob(row.source, work_dir, row.id))
            except TaskFilesChanged as exc:  # an evaluation rewrote the task: stop, loudly
                raise RunAborted(str(exc), RunOutcome.TASK_CHANGED) from None
            self.committer.evaluation(row, outcome.result, outcome.worker)
            future.set_result(outcome.result)
            if self.watch is not None:
                self.watch.observe(outcome.result)
        finally:
            self._in_flight.pop(digest, None)
            if not future.done():
                future.cancel()
            shutil.rmtree(work_dir, ignore_errors=True)


async def evaluate_once(executor: EvaluationExecutor, source: str,
                        work_dir: Path) -> EvaluationOutcome:
    """An evaluation that is not a stored child's (a tune trial, a first-program check), in a
    scratch folder removed afterwards."""
    shutil.rmtree(work_dir, ignore_errors=True)  # left by a session a kill interrupted
    try:
        return await executor.run(EvaluationJob(source, work_dir))
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
