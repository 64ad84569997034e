"""The run's search phases as `cambrian status`, the web UI and the report show them: one span
per phase (evaluations, budget share, best score at its start, why it began), and the steering
events inside them (extensions, stagnation recoveries, proposed sub-problems, strategy
transfers, combinations)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from cambrian.core.events import (
    PhaseChanged,
    PhaseExtended,
    StagnationRecovery,
    StrategyTransfer,
    SubproblemsProposed,
    SubsolutionsCombined,
)
from cambrian.store.store import Store


@dataclass(frozen=True)
class PhaseSpan:
    phase: str
    from_evaluated: int
    to_evaluated: int | None  # None: the phase the run is in
    from_budget: float
    to_budget: float | None
    best_at_start: float | None
    reason: str
    recoveries: int = 0
    extensions: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def phase_timeline(store: Store) -> list[PhaseSpan]:
    changes = store.events.of_type(PhaseChanged)
    recoveries = store.events.of_type(StagnationRecovery)
    extensions = store.events.of_type(PhaseExtended)
    spans = []
    for index, change in enumerate(changes):
        following = changes[index + 1] if index + 1 < len(changes) else None
        end = following.evaluated if following is not None else None

        def inside(evaluated: int, phase: str, start: int = change.evaluated,
                   stop: int | None = end, name: str = change.phase) -> bool:
            return phase == name and evaluated >= start and (stop is None or evaluated <= stop)

        spans.append(PhaseSpan(
            change.phase, change.evaluated, end, change.budget_position,
            following.budget_position if following is not None else None, change.best_score,
            change.reason, sum(inside(r.evaluated, r.phase) for r in recoveries),
            sum(inside(e.evaluated, e.phase) for e in extensions)))
    return spans


def _describe(event: Any) -> str:
    if isinstance(event, PhaseExtended):
        return f"{event.phase} extended to {event.until:.0%} of the budget: {event.reason}"
    if isinstance(event, StagnationRecovery):
        restart = f" from #{event.restart_parent}" if event.restart_parent else ""
        return (f"{event.phase}: no better program in {event.stagnant_for} evaluations, "
                f"{event.action.replace('_', ' ')}{restart}")
    if isinstance(event, SubproblemsProposed):
        if not event.subproblems:
            return f"no sub-problems proposed: {event.error}"
        return "sub-problems proposed: " + "; ".join(
            f"{group['name']} ({len(group['cases'])} cases)" for group in event.subproblems)
    if isinstance(event, StrategyTransfer):
        return (f"strategy transfer: {event.family} (#{event.candidate_id}, leader of "
                f"{event.source}) offered to {event.target}")
    sources = ", ".join(f"#{i}" for i in event.sources)
    made = f" into #{event.child_id}" if event.child_id else ""
    failed = f" (failed: {event.error})" if event.error else ""
    return f"sub-problem leaders {sources} combined by {event.method}{made}{failed}"


def steering_events(store: Store, limit: int = 20) -> list[dict[str, Any]]:
    """The latest extensions, recoveries, proposed sub-problems, transfers and combinations,
    oldest first."""
    stored = store.events.list(PhaseExtended, StagnationRecovery, SubproblemsProposed,
                               StrategyTransfer, SubsolutionsCombined)
    return [{"at": item.created_at, "kind": item.event.kind, "text": _describe(item.event)}
            for item in stored[-limit:]]
