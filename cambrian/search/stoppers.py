"""Early stops a person asks for: ``evolution.target_score`` (the best score reached a target)
and ``evolution.patience`` (so many evaluations without a better best score). Either ends the
run as having done its work: the session's outcome is ``target_reached`` or ``no_improvement``,
exit code 0. The engine asks :meth:`Stoppers.check` with its other stop rules, so proposals
stop starting and the ones in flight finish.

The counts follow the run's committed events; on resume they are rebuilt from the store (the
best score, and the evaluations spent when the run's best program was committed)."""

from __future__ import annotations

from collections.abc import Callable

from cambrian.config import EvolutionConfig
from cambrian.core.events import CandidateEvaluated, Event
from cambrian.core.objective import Objective
from cambrian.core.outcomes import RunOutcome
from cambrian.search.context import RunContext
from cambrian.store.store import Store

MAX_CONSECUTIVE_FAILED_SLOTS = 10
# Children screened out before full evaluation (e.g. GEPA's minibatch test) are expected to be
# common, so they stop the run only after a much longer unbroken series.
MAX_CONSECUTIVE_SCREENED_OUT = 40


class Stoppers:
    def __init__(self, config: EvolutionConfig, objective: Objective,
                 evaluations_spent: Callable[[], int]) -> None:
        self.target = config.target_score
        self.patience = config.patience
        self.objective = objective
        self.evaluations_spent = evaluations_spent
        self.best: float | None = None
        self.improved_at = 0  # evaluations spent when the best score last improved

    def restore(self, store: Store) -> None:
        best = store.candidates.best(self.objective)
        if best is None:
            return
        self.best = best.score
        if self.patience is None:
            return
        reached = [event.evaluated for event in store.events.of_type(CandidateEvaluated)
                   if event.candidate_id == best.id]
        self.improved_at = reached[-1] if reached else self.evaluations_spent()

    def follow(self, event: Event) -> None:
        """A subscriber of the run's event bus."""
        if isinstance(event, CandidateEvaluated) and event.best_score is not None \
                and self.objective.better(event.best_score, self.best):
            self.best = event.best_score
            self.improved_at = event.evaluated

    def check(self) -> tuple[str, RunOutcome] | None:
        """Why the run should stop now, with the outcome to record; None to go on."""
        if self.target is not None and self.best is not None and (
                self.best == self.target or self.objective.better(self.best, self.target)):
            return (f"target score reached (best {self.best:.6g}, target {self.target:.6g})",
                    RunOutcome.TARGET_REACHED)
        if self.patience is not None and self.best is not None:
            waited = self.evaluations_spent() - self.improved_at
            if waited >= self.patience:
                reason = (f"no better score in the last {waited} evaluations (patience "
                          f"{self.patience}; best {self.best:.6g})")
                return reason, RunOutcome.NO_IMPROVEMENT
        return None


class StopRule:
    """Why no new proposal may start: a budget cap, an early stop (above), or a run whose last
    proposals all failed. The engine asks it before launching a slot, and a slot before each
    new attempt within it."""

    def __init__(self, ctx: RunContext, stoppers: Stoppers | None) -> None:
        self.ctx = ctx
        self.stoppers = stoppers

    def reason(self, launching: int = 0) -> str | None:
        """``launching``: proposals about to start, besides those in flight."""
        counters = self.ctx.counters
        reason = self.ctx.budget.stop_reason(counters.proposals_in_flight + launching)
        if reason is not None:
            return reason
        early = self.stoppers.check() if self.stoppers is not None else None
        if early is not None:
            return early[0]
        if counters.screened_out >= MAX_CONSECUTIVE_SCREENED_OUT:
            return (f"the last {counters.screened_out} children were all screened out before "
                    "full evaluation")
        if counters.failed_slots >= MAX_CONSECUTIVE_FAILED_SLOTS:
            return (f"the last {counters.failed_slots} proposals produced no usable program; "
                    f"last errors: {' | '.join(counters.last_errors[-3:])}")
        return None
