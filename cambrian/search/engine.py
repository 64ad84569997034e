"""The evolution loop: one asyncio loop that keeps evaluation workers busy while new proposals are
generated (seed 000 Appendix A). It only schedules: what a proposal slot does is
``proposals.py``, what an evaluation does is ``evaluations.py``, how results are committed is
``commit.py``, and everything else the loop does happens in loop hooks (``core/hooks.py``).
The parts are built by the composition root, ``build.py``.

Resuming is reopening the store: the archive, RNG state and counters are rebuilt from it, pending
children are re-queued for evaluation, and numbering continues where it stopped.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.core.bus import Subscriber
from cambrian.core.events import SessionEnded, SessionStarted, SideStepFailed
from cambrian.core.hooks import LoopHook, StepFailed
from cambrian.core.outcomes import RunOutcome
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.executor import EvaluationExecutor
from cambrian.search import resume_snapshot
from cambrian.search.archive import Archive
from cambrian.search.context import Progress, RunAborted, RunContext
from cambrian.search.control import RunControl
from cambrian.search.evaluations import EvaluationQueue
from cambrian.search.live_feed import start_publisher
from cambrian.search.proposals import ProposalSlots
from cambrian.search.side_work import PeriodicJob, SideWork
from cambrian.search.stoppers import MAX_CONSECUTIVE_FAILED_SLOTS, StopRule
from cambrian.store.rows import CandidateRow

__all__ = ["Evolution", "RunAborted", "RunSummary"]

GENERATION_BUDGET_REACHED = "generation budget reached"


@dataclass(frozen=True)
class RunSummary:
    run_dir: Path
    best_id: int | None
    best_score: float | None
    initial_score: float | None
    evaluations: int  # against evolution.generations: evaluated children plus tune trials
    llm_calls: int
    stop_reason: str
    tune_trials: int = 0
    outcome: RunOutcome = RunOutcome.COMPLETED


class Evolution:
    def __init__(self, ctx: RunContext, archive: Archive, hooks: list[LoopHook],
                 progress: Progress, slots: ProposalSlots, queue: EvaluationQueue,
                 executor: EvaluationExecutor, search_state: Any, control: RunControl,
                 stop_rule: StopRule) -> None:
        self.ctx = ctx
        self.archive = archive
        self.hooks = hooks
        self.progress = progress
        self.slots = slots
        self.queue = queue
        self.executor = executor
        self.search_state = search_state
        self.control = control
        self.stop_rule = stop_rule
        self.stoppers = stop_rule.stoppers  # evolution.target_score / evolution.patience
        self.side_work = SideWork(
            [PeriodicJob(hook.name, hook.due, self._hook_step(hook), hook.blocks_proposals)
             for hook in hooks], self.side_call_stop, self._side_step_failed,
            self.evaluations_spent)
        self._started = False
        self._restored = False
        self._from_snapshot = False  # whether the restore loaded a resume snapshot
        # The entries of the run folder before this run was created in it (None: the run made
        # the folder), so that a run stopped by its preflight removes only what it wrote.
        self.folder_before_run: frozenset[str] | None = None
        # The outermost folder the start made for the run (the run folder, or a parent such as
        # runs/ it made too): what a run stopped by its preflight removes when it made one.
        self.folder_made: Path | None = None

    # ------------------------------------------------------------------ views

    @property
    def run_dir(self) -> Path:
        return self.ctx.run_dir

    @property
    def store(self) -> Any:
        return self.ctx.store

    @property
    def config(self) -> Any:
        return self.ctx.config

    @property
    def task(self) -> Any:
        return self.ctx.task

    @property
    def evaluator(self) -> Any:
        return self.executor.evaluator

    @evaluator.setter
    def evaluator(self, evaluator: Any) -> None:
        self.executor.evaluator = evaluator

    @property
    def selector(self) -> Any:
        return self.archive.selector

    def hook(self, name: str) -> LoopHook | None:
        """The loop hook of that name (``tune``, ``meta-scratchpad``, ``algorithm hooks``...)."""
        return next((hook for hook in self.hooks if hook.name == name), None)

    def subscribe(self, subscriber: Subscriber) -> Any:
        """Receive every event the run records, once committed; returns the unsubscriber."""
        return self.ctx.recorder.bus.subscribe(subscriber)

    # ------------------------------------------------------------------ budget

    def children_evaluated(self) -> int:
        return self.progress.children_evaluated()

    def evaluations_spent(self) -> int:
        return self.progress.evaluations_spent()

    def stop_reason(self, launching: int = 0) -> str | None:
        """Why no new proposal may start (``launching``: proposals about to start)."""
        return self.stop_rule.reason(launching)

    def side_call_stop(self) -> str | None:
        """Why no LLM call outside a proposal (scratchpad, prompt rewrite, hook step) may start."""
        return self.ctx.budget.stop_reason(self.ctx.counters.proposals_in_flight + 1)

    def _may_launch(self) -> bool:
        evolution = self.ctx.config.evolution
        in_flight = self.ctx.counters.proposals_in_flight
        pending = self.progress.pending
        committed = self.evaluations_spent() + pending
        return (
            not self.control.paused and self.control.stop_requested is None
            and not self.side_work.blocking()  # the next prompts should see its outcome
            and in_flight < evolution.max_proposals_in_flight
            # Proposals keep the evaluation workers busy but never run far ahead of the
            # results they should learn from.
            and pending + in_flight <= evolution.max_parallel_evaluations
            and committed + in_flight < evolution.generations
            and self.stop_reason(launching=1) is None
        )

    # ------------------------------------------------------------------ side work

    def _hook_step(self, hook: LoopHook) -> Any:
        async def step(evaluated: int) -> None:
            events = await hook.step(evaluated)
            if not events and not hook.state():
                return
            recorder = self.ctx.recorder
            with recorder.transaction():
                recorder.emit(*events)
                recorder.save_state(self.search_state())

        return step

    def _side_step_failed(self, job: PeriodicJob, failure: StepFailed, evaluated: int) -> None:
        recorder = self.ctx.recorder
        with recorder.transaction():
            recorder.emit(*failure.events, SideStepFailed(
                hook=job.name, reason=failure.reason, evaluated=evaluated,
                failures=job.failures, retry_at=job.retry_at or evaluated))
            recorder.save_state(self.search_state())

    # ------------------------------------------------------------------ main loop

    def restore(self) -> None:
        """Rebuild the archive from the store (once; ``run`` does it when it has not been)."""
        if not self._restored:
            self._restored = True
            self._from_snapshot = resume_snapshot.load(self.archive, self.ctx.store)
            if not self._from_snapshot:
                self.archive.replay(self.ctx.store)
            self.archive.restore(self.ctx.store, self.hooks, self.ctx.recorder)
            if self.stoppers is not None:
                self.stoppers.restore(self.ctx.store)
            for hook in self.hooks:
                hook.restore()

    def _checkpoint(self, snapshot: bool) -> None:
        """The resume snapshot (when ``snapshot``) and what the hooks keep beside it for the
        next resume (the novelty index's files)."""
        if snapshot:
            resume_snapshot.write(self.archive, self.ctx.store, self.ctx.recorder)
        for hook in self.hooks:
            hook.checkpoint()

    async def _prepare(self) -> None:
        self.restore()
        await self.executor.prepare()  # e.g. generate a judged task's test cases, failing fast
        for hook in self.hooks:  # checks, the initial program, the brief, a first program...
            await hook.prepare()

    async def run(self) -> RunSummary:
        if self._started:
            raise RuntimeError("an Evolution runs once; resume the run to continue it")
        self._started = True
        # The live feed a web UI in another process reads; whoever started the run (CLI,
        # Python API, notebook), the UI sees it live and can steer it.
        feed = start_publisher(self.run_dir, self.subscribe)
        try:
            return await self._run()
        finally:
            if feed is not None:
                feed.close()

    async def _run(self) -> RunSummary:
        ctx = self.ctx
        ctx.recorder.emit(SessionStarted(pid=os.getpid()))
        proposals: set[asyncio.Task[int | None]] = set()
        evaluations: set[asyncio.Task[None]] = set()
        side: set[asyncio.Future[Any]] = set()  # side tasks, and futures of their release
        steering: asyncio.Task[None] | None = None  # wakes the loop for control requests
        try:
            await self._prepare()
            queue: list[CandidateRow] = ctx.store.candidates.list(CandidateStatus.PENDING)
            next_generation = ctx.store.candidates.max_generation() + 1
            while True:
                self.control.apply_pending()
                stopping = self.control.stop_requested is not None
                if not stopping:
                    side.update(self.side_work.launch_due(self.evaluations_spent()))
                while self._may_launch():
                    ctx.counters.proposals_in_flight += 1
                    proposals.add(asyncio.create_task(self.slots.run(next_generation)))
                    next_generation += 1
                while queue and len(evaluations) < ctx.config.evolution.max_parallel_evaluations:
                    evaluations.add(asyncio.create_task(self.queue.evaluate(queue.pop(0))))
                busy = proposals or evaluations or (side and not stopping)
                if not busy and not (self.control.paused and not stopping):
                    break
                if steering is None or steering.done():
                    steering = asyncio.create_task(self.control.wait())
                done, _ = await asyncio.wait(proposals | evaluations | side | {steering},
                                             return_when=asyncio.FIRST_COMPLETED)
                children: list[int] = []
                for task in done:
                    proposals.discard(task)  # type: ignore[arg-type]
                    evaluations.discard(task)  # type: ignore[arg-type]
                    side.discard(task)
                    result = task.result()  # re-raises failures of the loop itself
                    if isinstance(result, int):
                        children.append(result)
                # Children stored in one turn are queued in the order they were stored, not in
                # the set's order: which of two equal programs is evaluated (and which is its
                # duplicate) then follows the store, which a replay reproduces.
                queue.extend(ctx.store.candidates.get(child) for child in sorted(children))
                if self.archive.taken_since_snapshot >= resume_snapshot.SNAPSHOT_EVERY:
                    self._checkpoint(snapshot=True)
        except BaseException as exc:
            for task in proposals | evaluations | side | ({steering} if steering else set()):
                task.cancel()
            await asyncio.gather(*proposals, *evaluations, *side, return_exceptions=True)
            ctx.recorder.emit(SessionEnded(reason=f"{type(exc).__name__}: {exc}",
                                           outcome=_outcome_of(exc).word))
            raise
        finally:
            for hook in self.hooks:
                await hook.close()
            await self.executor.close()
        for task in side | ({steering} if steering else set()):
            task.cancel()  # a scratchpad update still running is of no use to a finished run
        await asyncio.gather(*side, return_exceptions=True)
        # The next resume starts from here.
        self._checkpoint(snapshot=bool(self.archive.taken_since_snapshot)
                         or not self._from_snapshot)
        early = self.stoppers.check() if self.stoppers is not None else None
        if early is not None:  # a target score or patience: the run did its work
            reason, outcome = early
        else:
            reason = (GENERATION_BUDGET_REACHED
                      if self.evaluations_spent() >= ctx.config.evolution.generations
                      else f"stopped on request ({self.control.stop_requested})"
                      if self.control.stop_requested is not None
                      else self.stop_reason(launching=1) or "no further proposal possible")
            outcome = (RunOutcome.STOPPED if self.control.stop_requested is not None
                       and reason != GENERATION_BUDGET_REACHED else self._outcome(reason))
        ctx.recorder.emit(SessionEnded(reason=reason, outcome=outcome.word))
        return self.summary(reason, outcome)

    def _outcome(self, reason: str) -> RunOutcome:
        """Why the session ended, as an exit code: 0 only when it spent its budget (or, above,
        reached its target score or ran out of patience)."""
        if reason == GENERATION_BUDGET_REACHED:
            return RunOutcome.COMPLETED
        if self.ctx.budget.stop_reason(0) is not None:
            return RunOutcome.BUDGET_REACHED
        recent = self.ctx.store.contexts.recent(MAX_CONSECUTIVE_FAILED_SLOTS)
        if recent and all(context.error for context in recent):
            return RunOutcome.LLM_UNREACHABLE
        if self.children_evaluated() == 0:
            return RunOutcome.NOTHING_EVALUATED
        return RunOutcome.STALLED

    def summary(self, reason: str, outcome: RunOutcome = RunOutcome.COMPLETED) -> RunSummary:
        store = self.ctx.store
        best = store.candidates.best(self.ctx.objective)
        initial = store.candidates.find(1)
        return RunSummary(
            run_dir=self.ctx.run_dir,
            best_id=best.id if best else None,
            best_score=best.score if best else None,
            initial_score=initial.score if initial else None,
            evaluations=self.evaluations_spent(),
            llm_calls=store.contexts.count(),
            stop_reason=reason,
            tune_trials=self.progress.hook_evaluations(),
            outcome=outcome,
        )


def _outcome_of(error: BaseException) -> RunOutcome:
    if isinstance(error, (KeyboardInterrupt, asyncio.CancelledError)):
        return RunOutcome.INTERRUPTED
    if isinstance(error, RunAborted):
        return error.outcome
    return RunOutcome.FAILED
