"""Periodic work beside the proposals: the meta-scratchpad update, an algorithm's hook step, the
rewrite of a co-evolved system prompt. Each job runs as its own asyncio task when it is due, at
most once per new evaluation result.

Two rules keep side work from costing the search more than it gives:

- **back-off**: a step that produced nothing usable (it raised ``StepFailed``: a failed or
  skipped call, a reply with nothing to use) is not tried again before 2, then 4, 8, ... up to
  ``MAX_BACKOFF`` more evaluations; the first success resets it. Without it a scratchpad whose
  replies hold no recommendations was retried after every evaluation, each time a call;
- **one call at most**: a job that holds new proposals back (``blocks_proposals``, so the next
  prompt sees its outcome) does so only until its first LLM call has returned (the gateway tells
  it through ``CALL_RETURNED``), or until it ends if it makes none; whatever it does after that
  call (validating a rewritten strategy, a retry) runs beside the proposals.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from cambrian.core.hooks import StepFailed
from cambrian.llm.gateway import CALL_RETURNED

FIRST_BACKOFF = 2  # evaluations to wait after a first failure; doubles with each failure after
MAX_BACKOFF = 64


def backoff(failures: int) -> int:
    """Evaluations to wait after ``failures`` failed steps in a row (2, 4, 8, ... 64)."""
    return min(MAX_BACKOFF, FIRST_BACKOFF << max(0, failures - 1))


FailureListener = Callable[["PeriodicJob", StepFailed, int], None]


@dataclass
class PeriodicJob:
    name: str
    due: Callable[[int], bool]  # given the number of evaluated children
    start: Callable[[int], Awaitable[Any]]
    blocks_proposals: bool
    task: asyncio.Task[Any] | None = None
    started_at: int | None = None  # evaluated children when it last started
    failures: int = 0  # failed steps in a row
    retry_at: int | None = None  # after a failure: no new start before this many evaluations
    holding: bool = False  # holds new proposals back (until its first call has returned)
    released: asyncio.Future[None] | None = None

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def release(self) -> None:
        """Stop holding proposals back (its call returned, or it ended)."""
        self.holding = False
        if self.released is not None and not self.released.done():
            self.released.set_result(None)


class SideWork:
    def __init__(self, jobs: list[PeriodicJob],
                 budget_check: Callable[[], str | None] | None = None,
                 on_failure: FailureListener | None = None,
                 evaluated_now: Callable[[], int] | None = None) -> None:
        """``evaluated_now``: the run's evaluation count, read when a step fails, so that a
        slow step's back-off counts from its failure, not from its start."""
        self.jobs = jobs
        self.budget_check = budget_check
        self.on_failure = on_failure
        self.evaluated_now = evaluated_now

    def launch_due(self, evaluated: int) -> list[asyncio.Future[Any]]:
        """Start every job that is due; a job already running, already started at this
        evaluation count, or backing off after a failure waits. Once a budget cap is reached no
        job starts: the run is winding down and the jobs spend LLM calls.

        Returns what the loop should wait on: each job's task and, for a job that holds
        proposals back, a future done once it stops holding them (so the loop wakes up)."""
        due = [job for job in self.jobs
               if not job.running and job.started_at != evaluated
               and (job.retry_at is None or evaluated >= job.retry_at) and job.due(evaluated)]
        if not due or (self.budget_check is not None and self.budget_check() is not None):
            return []
        started: list[asyncio.Future[Any]] = []
        for job in due:
            job.started_at = evaluated
            context = contextvars.copy_context()
            if job.blocks_proposals:
                job.holding = True
                job.released = asyncio.get_running_loop().create_future()
                context.run(CALL_RETURNED.set, job.release)
                started.append(job.released)
            job.task = asyncio.create_task(self._run(job, evaluated), name=job.name,
                                           context=context)
            started.append(job.task)
        return started

    async def _run(self, job: PeriodicJob, evaluated: int) -> None:
        try:
            await job.start(evaluated)
        except StepFailed as failure:
            job.failures += 1
            failed_at = max(evaluated, self.evaluated_now()) if self.evaluated_now else evaluated
            job.retry_at = failed_at + backoff(job.failures)
            if self.on_failure is not None:
                self.on_failure(job, failure, failed_at)
        else:
            job.failures, job.retry_at = 0, None
        finally:
            job.release()

    def blocking(self) -> bool:
        """Whether a job holds new proposals back now."""
        return any(job.holding and job.running for job in self.jobs if job.blocks_proposals)
