"""What one finished (or partly finished) run contributes to a benchmark, read from its store."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cambrian.core.events import SessionEnded
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.store.store import Store

INITIAL_ID = 1  # the initial program is always the run's first candidate


@dataclass
class RunRecord:
    variant: str
    task: str
    seed: int
    run_dir: str
    outcome: str  # ran | resumed | skipped | failed
    direction: str
    # Best score so far after 0, 1, 2, ... evaluated children (index 0: the initial program);
    # None until a correct program has been evaluated.
    curve: list[float | None] = field(default_factory=list)
    evaluations: int = 0
    proposals: int = 0  # children proposed (every status but pending)
    correct: int = 0
    llm_calls: int = 0
    wall_time_s: float = 0.0
    stop_reason: str = ""
    error: str = ""

    @property
    def final_best(self) -> float | None:
        return self.curve[-1] if self.curve else None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "final_best": self.final_best}


def best_so_far_curve(store: Store, budget: int) -> list[float | None]:
    """Best score after each evaluation, in the order results were committed, cut at ``budget``
    children (a run continued beyond the benchmark's budget is compared at that budget)."""
    objective = Objective.of(store.runs.info().direction)
    evaluated = [row for row, _ in store.candidates.evaluated_in_commit_order()]
    initial = [row for row in evaluated if row.id == INITIAL_ID]
    children = [row for row in evaluated if row.id != INITIAL_ID][:budget]
    best: float | None = None
    curve: list[float | None] = []
    for row in initial + children:
        if row.status is CandidateStatus.CORRECT and objective.better(row.score, best):
            best = row.score
        curve.append(best)
    return curve


def read_record(store: Store, *, variant: str, task: str, seed: int, outcome: str, budget: int,
                error: str = "") -> RunRecord:
    rows = [r for r in store.candidates.list()
            if r.id != INITIAL_ID and r.status is not CandidateStatus.PENDING]
    ends = store.events.of_type(SessionEnded)
    curve = best_so_far_curve(store, budget)
    return RunRecord(
        variant=variant, task=task, seed=seed, run_dir=str(store.path.parent), outcome=outcome,
        direction=store.runs.info().direction,
        curve=curve,
        evaluations=max(0, len(curve) - 1),
        proposals=len(rows),
        correct=sum(r.status is CandidateStatus.CORRECT for r in rows),
        llm_calls=store.contexts.count(),
        wall_time_s=store.events.active_seconds(),
        stop_reason=ends[-1].reason if ends else "",
        error=error,
    )
