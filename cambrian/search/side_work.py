"""Periodic work beside the proposals: the meta-scratchpad update, an algorithm's hook step, the
rewrite of a co-evolved system prompt. Each job runs as its own asyncio task when it is due,
at most once per new evaluation result, and some hold new proposals back while they run so the
next prompt sees their outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class PeriodicJob:
    name: str
    due: Callable[[int], bool]  # given the number of evaluated children
    start: Callable[[int], Awaitable[Any]]
    blocks_proposals: bool
    task: asyncio.Task[Any] | None = None
    started_at: int | None = None  # evaluated children when it last started

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()


class SideWork:
    def __init__(self, jobs: list[PeriodicJob],
                 budget_check: Callable[[], str | None] | None = None) -> None:
        self.jobs = jobs
        self.budget_check = budget_check

    def launch_due(self, evaluated: int) -> list[asyncio.Task[Any]]:
        """Start every job that is due; a job already running or already started at this
        evaluation count waits (a failed update must not retry in a tight loop). Once a budget
        cap is reached no job starts: the run is winding down and the jobs spend LLM calls."""
        due = [job for job in self.jobs
               if not job.running and job.started_at != evaluated and job.due(evaluated)]
        if not due or (self.budget_check is not None and self.budget_check() is not None):
            return []
        started = []
        for job in due:
            job.started_at = evaluated
            job.task = asyncio.create_task(job.start(evaluated), name=job.name)
            started.append(job.task)
        return started

    def blocking(self) -> bool:
        return any(job.running for job in self.jobs if job.blocks_proposals)
