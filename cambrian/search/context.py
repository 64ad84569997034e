"""What the parts of one run share, built once by the composition root (``build.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cambrian.config import RunConfig
from cambrian.core.events import (
    CandidateEvaluated,
    CandidateProposed,
    DuplicateFound,
    Event,
    ScreenedOut,
)
from cambrian.core.hooks import LoopHook
from cambrian.core.objective import Objective
from cambrian.core.outcomes import RunOutcome
from cambrian.core.status import EVALUATED, CandidateStatus
from cambrian.llm.gateway import LLMGateway
from cambrian.search.budget import BudgetManager
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store
from cambrian.task.folder import Task


class RunAborted(RuntimeError):
    """The run cannot continue (e.g. the LLM rejects every request); the store stays valid.
    ``outcome`` says which exit code ``cambrian run`` returns; ``before_start`` marks a run
    stopped by its preflight, before any LLM call (a new run's folder then holds nothing worth
    keeping)."""

    def __init__(self, message: str, outcome: RunOutcome = RunOutcome.FAILED, *,
                 before_start: bool = False) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.before_start = before_start


@dataclass
class LoopCounters:
    """The loop's live counts, read by the budget checks and the stop rules."""

    proposals_in_flight: int = 0
    failed_slots: int = 0  # proposal slots in a row that produced no usable program
    screened_out: int = 0  # children in a row screened out before full evaluation
    last_errors: list[str] = field(default_factory=list)

    def note_errors(self, errors: list[str]) -> None:
        self.last_errors = (self.last_errors + errors)[-5:]


@dataclass
class RunContext:
    run_dir: Path
    task: Task
    config: RunConfig
    store: Store
    recorder: Recorder
    gateway: LLMGateway
    budget: BudgetManager
    objective: Objective
    counters: LoopCounters

    @property
    def work_root(self) -> Path:
        return self.run_dir / "work"


class Progress:
    """How much of the generation budget is spent: evaluated children plus the hooks' own
    evaluations (tune trials count against ``evolution.generations`` like children do).

    The counts are read from the store once and then kept from the run's committed events
    (the loop asks for them several times per generation; a COUNT over a large archive each
    time would dominate the loop's own cost)."""

    def __init__(self, store: Store, hooks: list[LoopHook]) -> None:
        self.store = store
        self.hooks = hooks  # the run's hook list (filled in by the composition root)
        self.evaluated = store.candidates.count(*EVALUATED)
        self.pending = store.candidates.count(CandidateStatus.PENDING)

    def follow(self, event: Event) -> None:
        """Keep the counts: a subscriber of the run's event bus."""
        if isinstance(event, CandidateProposed):
            self.pending += 1
        elif isinstance(event, CandidateEvaluated):
            self.pending -= 1
            self.evaluated += 1
        elif isinstance(event, (DuplicateFound, ScreenedOut)):
            self.pending -= 1

    def children_evaluated(self, committing: int = 0) -> int:
        """Children evaluated so far (the initial program excluded); ``committing``: evaluations
        being committed whose events are not published yet."""
        return max(0, self.evaluated + committing - 1)

    def hook_evaluations(self) -> int:
        return sum(hook.evaluations_spent() for hook in self.hooks)

    def evaluations_spent(self, committing: int = 0) -> int:
        return self.children_evaluated(committing) + self.hook_evaluations()
