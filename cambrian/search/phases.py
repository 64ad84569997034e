"""Search phases (seed 004 §10.6): comprehension, then exploration, exploitation and polishing,
each steering proposals its own way through the loop-hook seam (`core.hooks.Steering`): its
intent mix, its temperature scale over each intent's base temperature (seed 002 §10.5) and the
models it may use (seed 004 §10.5).

**Budget split** (seed 004 §10.9): each search phase owns a share of the binding budget
(`phases.budget_shares`); the run's position in it is the furthest of evaluations, LLM calls,
wall time (`BudgetManager.progress`) and money (spent over `budget.max_cost_usd`), so a phase
whose money is gone ends as surely as one whose calls are.

**Adaptive transitions** (seed 004 §10.10): a phase ends when its share is spent, or earlier
when it stagnates (`phases.stagnation` evaluations without a better best, at least
`min_phase_share` of its share spent, and, for exploration, at least `min_strategies` strategy
niches found when niches are tagged). A breakthrough in the second half of a phase (a best
`breakthrough` better, relatively, than the phase's starting best) extends the phase by
`extension` of the budget, at most half of what the phases after it have left.

**Stagnation recovery** (seed 004 §10.6): a phase that stagnates but may not move on (too
early, or polishing, the last) tries, in turn, a hotter temperature, an intent mix turned
towards exploration, and a restart from a diverse elite (the correct program among the best
ten whose code differs most from the best's), each for `recovery_proposals` proposals.

Every change is a typed event (`phase_changed`, `phase_extended`, `stagnation_recovery`),
and the controller's position is saved with every commit, so a resumed run goes on in the
phase it was in.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from cambrian.config.phases import SEARCH_PHASES, PhasesConfig
from cambrian.core.events import PhaseChanged, PhaseExtended, StagnationRecovery
from cambrian.core.hooks import LoopHook, Steering
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store

log = logging.getLogger(__name__)

COMPREHENSION = "comprehension"
# Recovery "switch_intents": exploration's intents weigh this much more, exploitation's less.
RECOVERY_EXPLORE_BOOST = {"strategy": 3.0, "refactor": 2.0, "crossover": 2.0, "tuning": 0.5}
RECOVERY_TEMPERATURE = 1.3
DIVERSE_ELITES = 10


@dataclass
class PhasePosition:
    """Where the run is among the phases (saved with every commit)."""

    phase: str = COMPREHENSION
    started_at: float = 0.0  # budget position when the phase began
    started_evaluated: int = 0
    start_best: float | None = None  # the best score when the phase began
    extensions: dict[str, float] = field(default_factory=dict)  # budget added per phase
    best: float | None = None
    improved_at: int = 0  # evaluations when the best last improved
    recoveries: int = 0  # recoveries tried in this stagnation stretch
    recovery: str | None = None
    recovery_left: int = 0


class PhaseController(LoopHook):
    name = "phases"

    def __init__(self, config: PhasesConfig, store: Store, recorder: Recorder,
                 objective: Objective, *, evaluated: Callable[[], int],
                 budget_position: Callable[[int], float],
                 niche_count: Callable[[], int | None] = lambda: None) -> None:
        """``budget_position(evaluated)``: the share of the binding budget spent (0..1);
        ``niche_count()``: strategy niches found so far (None: no niches are tagged)."""
        self.config = config
        self.store = store
        self.recorder = recorder
        self.objective = objective
        self.evaluated = evaluated
        self.budget_position = budget_position
        self.niche_count = niche_count
        self.position = PhasePosition()
        self._restart: int | None = None

    # ------------------------------------------------------------------ life

    def load_state(self, state: dict[str, Any]) -> None:
        saved = state.get("position")
        if isinstance(saved, dict):
            self.position = PhasePosition(**{k: v for k, v in saved.items()
                                             if k in PhasePosition.__dataclass_fields__})

    def state(self) -> dict[str, Any]:
        return {"position": asdict(self.position)}

    async def prepare(self) -> None:
        if self.store.events.latest(PhaseChanged) is None:
            self.recorder.emit(PhaseChanged(phase=COMPREHENSION, previous="", reason="start",
                                            evaluated=self.evaluated(), budget_position=0.0,
                                            best_score=self._best()))

    # ------------------------------------------------------------------ the phases

    def _best(self) -> float | None:
        best = self.store.candidates.best(self.objective)
        return best.score if best is not None else None

    def phase_end(self, phase: str) -> float:
        """The budget position at which ``phase`` ends (shares and extensions so far)."""
        end = 0.0
        for name in SEARCH_PHASES:
            end += self.config.budget_shares[name] + self.position.extensions.get(name, 0.0)
            if name == phase:
                return min(1.0, end)
        return 1.0

    def _next_phase(self) -> str | None:
        if self.position.phase == COMPREHENSION:
            return SEARCH_PHASES[0]
        index = SEARCH_PHASES.index(self.position.phase)  # type: ignore[arg-type]
        return SEARCH_PHASES[index + 1] if index + 1 < len(SEARCH_PHASES) else None

    def _enter(self, phase: str, reason: str, evaluated: int, at: float) -> None:
        previous = self.position.phase
        best = self._best()
        self.position = PhasePosition(
            phase=phase, started_at=at, started_evaluated=evaluated, start_best=best,
            extensions=self.position.extensions, best=best, improved_at=evaluated)
        log.info("search phase %s -> %s: %s", previous, phase, reason)
        self.recorder.emit(PhaseChanged(phase=phase, previous=previous, reason=reason,
                                        evaluated=evaluated, budget_position=round(at, 4),
                                        best_score=best))

    def _note_best(self, evaluated: int) -> None:
        best = self._best()
        position = self.position
        if best is not None and self.objective.better(best, position.best):
            position.best = best
            position.improved_at = evaluated
            position.recoveries, position.recovery, position.recovery_left = 0, None, 0
            self._maybe_extend(best, evaluated)

    def _maybe_extend(self, best: float, evaluated: int) -> None:
        position = self.position
        start = position.start_best
        if position.phase not in SEARCH_PHASES or start is None or position.phase == "polishing":
            return
        gain = self.objective.gain(best, start)
        if gain < self.config.breakthrough * max(abs(start), 1e-12):
            return
        end = self.phase_end(position.phase)
        share = end - position.started_at
        at = self.budget_position(evaluated)
        if share > 0 and (at - position.started_at) / share < 0.5:
            return  # early in the phase there is time left to follow it up
        # Taken from the phases after it, which keep at least half of what they had.
        extension = min(self.config.extension, (1.0 - end) / 2)
        if extension <= 0 or position.extensions.get(position.phase, 0.0) >= self.config.extension:
            return
        position.extensions[position.phase] = position.extensions.get(position.phase, 0.0) + extension
        position.start_best = best  # a further extension needs a further breakthrough
        self.recorder.emit(PhaseExtended(phase=position.phase, until=round(
            self.phase_end(position.phase), 4), evaluated=evaluated, best_score=best,
            reason=f"breakthrough: {start:g} -> {best:g}"))

    def _stagnant(self, evaluated: int) -> bool:
        return evaluated - self.position.improved_at >= self.config.stagnation

    def _may_move_on_early(self, at: float) -> bool:
        position = self.position
        share = self.phase_end(position.phase) - position.started_at
        if share > 0 and (at - position.started_at) / share < self.config.min_phase_share:
            return False
        if position.phase == "exploration":
            niches = self.niche_count()
            return niches is None or niches >= self.config.min_strategies
        return position.phase != "polishing"

    def update(self) -> None:
        """Move between phases as the budget and the run's progress say (called before every
        proposal)."""
        evaluated = self.evaluated()
        at = min(1.0, max(0.0, self.budget_position(evaluated)))
        if self.position.phase == COMPREHENSION:
            self._enter(SEARCH_PHASES[0], "the problem is read; the search starts", evaluated, 0.0)
        self._note_best(evaluated)
        following = self._next_phase()
        if following is None:
            self._recover_if_stagnant(evaluated)
            return
        if at >= self.phase_end(self.position.phase) - 1e-9:
            while following is not None and at >= self.phase_end(self.position.phase) - 1e-9:
                self._enter(following, f"its share of the budget is spent ({at:.0%} of the "
                            "run)", evaluated, at)
                following = self._next_phase()
        elif self._stagnant(evaluated) and self._may_move_on_early(at):
            self._enter(following, f"no better program in {evaluated - self.position.improved_at}"
                        " evaluations", evaluated, at)
        else:
            self._recover_if_stagnant(evaluated)

    # ------------------------------------------------------------------ recovery

    def _recover_if_stagnant(self, evaluated: int) -> None:
        position = self.position
        if position.recovery_left > 0 or not self._stagnant(evaluated) or not self.config.recovery:
            return
        stretch = evaluated - position.improved_at
        if stretch < self.config.stagnation * (position.recoveries + 1):
            return  # one recovery per stagnation period
        action = self.config.recovery[position.recoveries % len(self.config.recovery)]
        restart = self._diverse_elite() if action == "restart" else None
        if action == "restart" and restart is None:
            action = "raise_temperature"
        position.recoveries += 1
        position.recovery, position.recovery_left = action, self.config.recovery_proposals
        self._restart = restart
        self.recorder.emit(StagnationRecovery(phase=position.phase, action=action,
                                              evaluated=evaluated, stagnant_for=stretch,
                                              restart_parent=restart))

    def _diverse_elite(self) -> int | None:
        """Among the best correct programs, the one whose code differs most from the best's."""
        correct = [row for row in self.store.candidates.list(CandidateStatus.CORRECT)
                   if row.score is not None and row.source]
        if len(correct) < 2:
            return None
        ranked = sorted(correct, key=lambda row: self.objective.fitness(row.score),
                        reverse=True)[:DIVERSE_ELITES]
        best = ranked[0]
        return min(ranked[1:], key=lambda row: difflib.SequenceMatcher(
            None, best.source or "", row.source or "", autojunk=False).quick_ratio()).id

    # ------------------------------------------------------------------ steering

    def steer(self, rng: Any) -> Steering:
        self.update()
        position = self.position
        phase = position.phase if position.phase in SEARCH_PHASES else SEARCH_PHASES[0]
        weights = dict(self.config.intent_mix.get(phase, {}))  # type: ignore[call-overload]
        scale = self.config.temperature_scale.get(phase, 1.0)  # type: ignore[call-overload]
        restart = None
        if position.recovery_left > 0:
            position.recovery_left -= 1
            if position.recovery == "raise_temperature":
                scale *= RECOVERY_TEMPERATURE
            elif position.recovery == "switch_intents":
                for name, boost in RECOVERY_EXPLORE_BOOST.items():
                    weights[name] = weights.get(name, 1.0) * boost
            restart, self._restart = self._restart, None
        models = frozenset(self.config.models.get(phase, ()))  # type: ignore[call-overload]
        return Steering(intent_weights=weights, intent_temperatures=True,
                        temperature_scale=scale, models=models, restart_parent=restart)
