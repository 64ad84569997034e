"""Per (variant, task) statistics over seeds."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from cambrian.bench.metrics import RunRecord


@dataclass
class Spread:
    """Mean, standard deviation (over seeds, n-1 denominator; 0 for one seed), min and max of
    the seeds that have a value; all None when none has."""

    mean: float | None
    std: float | None
    low: float | None
    high: float | None
    n: int

    @classmethod
    def of(cls, values: list[float | None]) -> Spread:
        present = [v for v in values if v is not None]
        if not present:
            return cls(None, None, None, None, 0)
        std = statistics.stdev(present) if len(present) > 1 else 0.0
        return cls(statistics.fmean(present), std, min(present), max(present), len(present))


@dataclass
class Checkpoint:
    fraction: float
    evaluations: int
    best: Spread


@dataclass
class VariantTaskSummary:
    variant: str
    task: str
    direction: str
    budget: int
    runs: int
    failed_runs: int
    stopped_early: int  # runs with fewer evaluations than the budget
    final_best: Spread
    checkpoints: list[Checkpoint]
    proposal_success_rate: float | None  # correct children / proposed children, pooled over seeds
    llm_calls_mean: float
    wall_time_s_mean: float
    curve: list[Spread] = field(default_factory=list)  # index: evaluated children

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["curve"] = {key: [getattr(s, key) for s in self.curve]
                         for key in ("mean", "std", "low", "high")}
        return data


def padded_curve(curve: list[float | None], budget: int) -> list[float | None]:
    """The curve over 0..budget evaluations; a run that stopped early keeps its last best."""
    if not curve:
        return [None] * (budget + 1)
    head = curve[: budget + 1]
    return head + [head[-1]] * (budget + 1 - len(head))


def checkpoint_evaluations(fraction: float, budget: int) -> int:
    return max(1, math.ceil(fraction * budget - 1e-9))


def summarize(records: list[RunRecord], budget: int,
              checkpoints: tuple[float, ...]) -> list[VariantTaskSummary]:
    """One summary per (variant, task), in the order the pairs first appear in ``records``."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        groups.setdefault((record.variant, record.task), []).append(record)
    summaries = []
    for (variant, task), group in groups.items():
        curves = [padded_curve(r.curve, budget) for r in group]
        curve = [Spread.of([c[x] for c in curves]) for x in range(budget + 1)]
        proposals = sum(r.proposals for r in group)
        summaries.append(VariantTaskSummary(
            variant=variant, task=task, direction=group[0].direction, budget=budget,
            runs=len(group),
            failed_runs=sum(r.outcome == "failed" for r in group),
            stopped_early=sum(r.evaluations < budget for r in group),
            final_best=curve[budget],
            checkpoints=[Checkpoint(f, checkpoint_evaluations(f, budget),
                                    curve[checkpoint_evaluations(f, budget)]) for f in checkpoints],
            proposal_success_rate=sum(r.correct for r in group) / proposals if proposals else None,
            llm_calls_mean=statistics.fmean(r.llm_calls for r in group),
            wall_time_s_mean=statistics.fmean(r.wall_time_s for r in group),
            curve=curve,
        ))
    return summaries
