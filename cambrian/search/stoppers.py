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
from cambrian.store.store import Store


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
