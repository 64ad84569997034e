"""The run's own statistics as a self-reflection reads them (seed 002 §10.10, population
statistics as meta-information): success per mutation intent, per model, per strategy niche of
the parent and per phase (when the run has niches or phases), the best score's trajectory and
the commonest failures, rendered in a few hundred tokens so that a small local model's window
holds them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from cambrian.core.objective import Objective
from cambrian.core.status import EVALUATED, CandidateStatus
from cambrian.store.failure_kinds import failures_by_kind
from cambrian.store.outcomes import ChildOutcome
from cambrian.store.store import Store

MAX_ROWS = 6  # rows of each table shown
MAX_FAILURES = 3
# Events other parts of the search may write; read when present (no import: they are optional).
STRATEGY_TAGGED = "strategy_tagged"  # payload: candidate_id, family
PHASE_CHANGED = "phase_changed"  # payload: the phase entered under one of PHASE_KEYS
PHASE_KEYS = ("phase", "to", "name")


@dataclass(frozen=True)
class Tally:
    """What the children of one group (an intent, a model, a niche, a phase) became."""

    name: str
    tried: int = 0  # finished proposals: evaluated, refused, rejected or duplicate
    evaluated: int = 0
    correct: int = 0
    improved: int = 0  # correct and better than their correct parent
    failed_calls: int = 0  # a model's LLM calls that failed (the ledger)

    def line(self) -> str:
        parts = [f"{self.tried} tried", f"{self.correct} correct", f"{self.improved} beat parent"]
        if self.failed_calls:
            parts.append(f"{self.failed_calls} failed calls")
        return f"- {self.name}: " + ", ".join(parts)


@dataclass(frozen=True)
class Trajectory:
    """The best score so far and how it moved."""

    initial: float | None
    best: float | None
    window: int  # evaluations the recent gain is measured over (at most those made)
    # Of the best over the last ``window`` evaluations (None: no correct program before them).
    gain: float | None
    stagnant: int  # evaluations since the best last improved

    def recent(self) -> str:
        last = f"the last {self.window} evaluations"
        if self.gain is None:
            return f"first correct program in {last}"
        return f"improved by {self.gain:.6g} in {last}" if self.gain else f"no gain in {last}"


@dataclass(frozen=True)
class RunSummary:
    evaluated: int
    budget: int
    better_word: str  # "higher" / "lower"
    trajectory: Trajectory
    intents: tuple[Tally, ...] = ()
    models: tuple[Tally, ...] = ()
    niches: tuple[Tally, ...] = ()
    phases: tuple[Tally, ...] = ()
    failures: tuple[tuple[str, int], ...] = ()

    def render(self) -> str:
        """The statistics as the reflection prompt shows them."""
        t = self.trajectory
        lines = [f"After {self.evaluated} of {self.budget} evaluations "
                 f"({self.better_word} score is better):"]
        if t.best is None:
            lines.append("no correct program yet.")
        else:
            lines.append(f"best score {t.best:.6g} (initial {_number(t.initial)}); "
                         f"{t.recent()}; " + ("the latest evaluation set it." if not t.stagnant
                                              else f"no new best for {t.stagnant} evaluations."))
        for title, rows in (("Mutation intents", self.intents), ("Models", self.models),
                            ("Strategy niches (of the parent)", self.niches),
                            ("Phases", self.phases)):
            if rows:
                lines.append(f"{title}:")
                lines.extend(row.line() for row in rows[:MAX_ROWS])
        if self.failures:
            lines.append("Commonest failures:")
            lines.extend(f"- {kind}: {count}" for kind, count in self.failures[:MAX_FAILURES])
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """The numbers, for the stored ``reflection`` event."""
        def table(rows: tuple[Tally, ...]) -> dict[str, dict[str, int]]:
            return {r.name: {k: v for k, v in asdict(r).items() if k != "name"} for r in rows}

        return {"evaluated": self.evaluated, "budget": self.budget,
                **asdict(self.trajectory), "intents": table(self.intents),
                "models": table(self.models), "niches": table(self.niches),
                "phases": table(self.phases), "failures": dict(self.failures)}


def _number(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


def tally(children: Iterable[ChildOutcome], key: Callable[[ChildOutcome], str | None],
          failed_calls: dict[str, int] | None = None) -> tuple[Tally, ...]:
    """Children grouped by ``key`` (None: left out), the most tried first."""
    groups: dict[str, list[ChildOutcome]] = {}
    for child in children:
        name = key(child)
        if name is not None:
            groups.setdefault(name, []).append(child)
    rows = [Tally(name, len(group), sum(c.status in EVALUATED for c in group),
                  sum(c.status is CandidateStatus.CORRECT for c in group),
                  sum(c.improved for c in group), (failed_calls or {}).get(name, 0))
            for name, group in groups.items()]
    return tuple(sorted(rows, key=lambda r: (-r.tried, r.name)))


def trajectory(store: Store, objective: Objective, window: int) -> Trajectory:
    initial: float | None = None
    best: float | None = None
    bests: list[float | None] = []  # the best after each evaluated child
    improved_at = 0
    for point in store.views.evaluation_points():
        score = point.score if point.status is CandidateStatus.CORRECT else None
        if point.candidate_id == 1:
            initial = score
            best = objective.best([best, score])
            continue
        if objective.better(score, best):
            best, improved_at = score, len(bests) + 1
        bests.append(best)
    window = min(window, len(bests))
    earlier = bests[-window - 1] if len(bests) > window else initial
    gain = objective.gain(best, earlier) if best is not None and earlier is not None else None
    return Trajectory(initial, best, window, gain, len(bests) - improved_at)


def niche_of_parent(store: Store) -> Callable[[ChildOutcome], str | None]:
    """The strategy family of a child's parent, from ``strategy_tagged`` events (a program's
    latest tag); every child is left out when the run tags none."""
    families: dict[int, str] = {}
    for stored in store.events.list(STRATEGY_TAGGED):
        payload = stored.event.payload()
        if isinstance(payload.get("candidate_id"), int) and payload.get("family"):
            families[payload["candidate_id"]] = str(payload["family"])
    return lambda child: families.get(child.parent_id) if child.parent_id else None


def phase_of(store: Store) -> Callable[[ChildOutcome], str | None]:
    """A child's phase: its ``notes.phase``, else the phase the last ``phase_changed`` event
    before it entered."""
    changes: list[tuple[float, str]] = []
    for stored in store.events.list(PHASE_CHANGED):
        payload = stored.event.payload()
        name = next((payload[k] for k in PHASE_KEYS if isinstance(payload.get(k), str)), None)
        if name:
            changes.append((stored.created_at, name))

    def phase(child: ChildOutcome) -> str | None:
        if child.phase is not None:
            return child.phase
        entered = [name for at, name in changes if at <= child.created_at]
        return entered[-1] if entered else None

    return phase


def summarise(store: Store, objective: Objective, *, evaluated: int, budget: int,
              window: int) -> RunSummary:
    """The run's statistics now; ``window``: evaluations the recent gain is measured over."""
    children = store.outcomes.children(objective)
    failed = {row.model: row.failed_calls for row in store.contexts.ledger()}
    return RunSummary(
        evaluated=evaluated, budget=budget, better_word=objective.better_word,
        trajectory=trajectory(store, objective, window),
        intents=tally(children, lambda c: c.intent),
        models=tally(children, lambda c: c.model, failed),
        niches=tally(children, niche_of_parent(store)),
        phases=tally(children, phase_of(store)),
        failures=tuple((f.kind, f.count) for f in failures_by_kind(store)),
    )
