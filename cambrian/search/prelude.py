"""A first program for a task that has none (seed 004 §4 "Phase 1"): a loop hook acting once,
before the first proposal. The LLM writes it, the task's evaluation checks it, and it is
committed as candidate 1 with that evaluation (not evaluated again)."""

from __future__ import annotations

from collections.abc import Callable

from cambrian.core.evaluation import EvaluationResult
from cambrian.core.hooks import LoopHook
from cambrian.core.outcomes import RunOutcome
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.executor import EvaluationExecutor
from cambrian.mutate.first_program import FirstProgramError, FirstProgramWriter
from cambrian.mutate.step.wiring import WRITTEN_BY_LLM
from cambrian.search.commit import Committer
from cambrian.search.context import RunAborted, RunContext
from cambrian.search.evaluations import evaluate_once
from cambrian.store.rows import NewCandidate


class FirstProgramHook(LoopHook):
    name = "first program"

    def __init__(self, ctx: RunContext, executor: EvaluationExecutor, committer: Committer,
                 brief: Callable[[], str | None], budget_check: Callable[[], str | None]) -> None:
        self.ctx = ctx
        self.executor = executor
        self.committer = committer
        self.brief = brief  # the problem brief, once the comprehension hook has prepared it
        self.budget_check = budget_check

    async def prepare(self) -> None:
        ctx = self.ctx
        if ctx.store.candidates.exists(1):
            return
        label = ctx.gateway.label(ctx.config.first_program.model, "first_program.model")
        writer = FirstProgramWriter(ctx.config.first_program, ctx.task, ctx.gateway,
                                    ctx.recorder, label, self.budget_check)

        async def evaluate(source: str, attempt: int) -> EvaluationResult:
            work_dir = ctx.work_root / f"first-program-{attempt}"
            return (await evaluate_once(self.executor, source, work_dir)).result

        try:
            program = await writer.write(self.brief(), evaluate)
        except FirstProgramError as exc:
            raise RunAborted(str(exc), RunOutcome.NOTHING_EVALUATED) from None
        candidate_id = ctx.recorder.add_candidate(NewCandidate(
            generation=0, island=0, parent_id=None, operator="init",
            status=CandidateStatus.PENDING, language=ctx.task.language.name,
            source=program.source,
            description=program.description or "initial program written by the LLM",
            model=label, context_id=program.context_id,
            notes={WRITTEN_BY_LLM: True, "attempts": program.attempts,
                   "markers_added": program.markers_added}))
        # Its evaluation already ran as the check; commit that result rather than run it again.
        self.committer.evaluation(ctx.store.candidates.get(candidate_id), program.result)
