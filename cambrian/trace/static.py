"""Static analysis of a run (seed 001 §5.1): program size and numeric-literal counts over the
run, the final best's lineage depth and when it was found, and the share of evaluations spent on
dead branches (programs that are not ancestors of the final best)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cambrian.core.status import CandidateStatus
from cambrian.lang.lines import language_named, lines_of_code, numeric_literal_count
from cambrian.trace.model import Trace


@dataclass(frozen=True)
class ProgramStats:
    candidate_id: str
    iteration: int
    evaluation_index: int  # position among evaluated programs (the seed is 0)
    loc: int
    numeric_literals: int
    score: float | None
    status: str


@dataclass(frozen=True)
class StaticReport:
    programs: list[ProgramStats]
    best_id: str | None
    best_score: float | None
    best_iteration: int | None
    # Iteration of the final best scaled to 0..1 over the run's first..last iteration.
    normalised_best_iteration: float | None
    # Parent edges from the final best back to its root (the seed has depth 0).
    lineage_depth: int | None
    best_lineage: list[str] = field(default_factory=list)  # root ... best
    evaluated_children: int = 0  # evaluated programs that have a parent
    dead_branch_evaluations: int = 0
    dead_branch_share: float | None = None
    # (evaluation index, best correct score so far) at every evaluated program.
    best_so_far: list[tuple[int, float | None]] = field(default_factory=list)

    def to_dict(self, *, with_programs: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if not with_programs:
            data.pop("programs")
            data.pop("best_so_far")
        return data


def analyse_static(trace: Trace) -> StaticReport:
    language = language_named(trace.run.language)
    evaluated = trace.evaluated()
    programs = [
        ProgramStats(
            candidate_id=c.id, iteration=c.iteration, evaluation_index=i,
            loc=lines_of_code(c.source or "", language),
            numeric_literals=numeric_literal_count(c.source or "", language),
            score=c.score, status=c.status,
        )
        for i, c in enumerate(evaluated)
    ]
    best_so_far: list[tuple[int, float | None]] = []
    running: float | None = None
    for i, c in enumerate(evaluated):
        if c.status is CandidateStatus.CORRECT and c.score is not None and (
                running is None or trace.better(c.score, running)):
            running = c.score
        best_so_far.append((i, running))

    best = trace.best()
    children = [c for c in evaluated if trace.parent_of(c.id) is not None]
    if best is None:
        return StaticReport(programs=programs, best_id=None, best_score=None, best_iteration=None,
                            normalised_best_iteration=None, lineage_depth=None,
                            evaluated_children=len(children), best_so_far=best_so_far)
    ancestors = trace.ancestors(best.id)
    lineage = set(ancestors) | {best.id}
    dead = sum(1 for c in children if c.id not in lineage)
    iterations = [c.iteration for c in trace.candidates]
    first, last = min(iterations), max(iterations)
    return StaticReport(
        programs=programs,
        best_id=best.id,
        best_score=best.score,
        best_iteration=best.iteration,
        normalised_best_iteration=(best.iteration - first) / (last - first)
        if last > first else 0.0,
        lineage_depth=len(ancestors),
        best_lineage=[*reversed(ancestors), best.id],
        evaluated_children=len(children),
        dead_branch_evaluations=dead,
        dead_branch_share=dead / len(children) if children else None,
        best_so_far=best_so_far,
    )
