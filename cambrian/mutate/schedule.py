"""Which mutation intent the next proposal gets (seed 002 §10.6 and §10.10).

The weight of an intent is the product of two factors:

* its **phase share**. Exploration intents (strategy, refactor, crossover) together get
  ``p_explore(progress) = max(explore_end, explore_start * (1 - progress))`` (seed 002 §10.6,
  ``max(0.1, 0.5 * (1 - progress))`` with the defaults), where progress is the furthest of
  evaluated children over ``evolution.generations``, LLM calls over ``budget.max_llm_calls`` and
  time over ``budget.max_wall_time_s``. Exploitation intents (tuning, local_fix, refinement,
  improve_step) share the rest in proportion 0.4 / 0.3 / 0.3 / 0.3; exploration intents share
  theirs evenly.
* its **recent success** (seed 002 §10.10): over the intent's last ``window`` uses,
  ``floor + (improved + 0.5 * 2) / (uses + 2)``, where a use is an evaluated child ("improved"
  when it is correct and beats its parent) or a reply that could not be used (never improved:
  an intent a model cannot carry out, such as a full rewrite for a 1.5B model, fades). The two pseudo-uses at the seed's uninformed prior of 0.5 keep a single early
  result from swinging the weights; ``floor`` (the seed's +0.1 smoothing) keeps an intent that
  has not paid off lately from starving.

With ``mutation.intent_bandit`` (on by default) the second factor is the intent bandit's
(``intent_bandit.py``) instead: per island, UCB1 over the gain each proposal realised, so an
intent that paid keeps its share in proportion to what it gained, not only to how often it beat
its parent. Every ``SNAPSHOT_EVERY`` pulls on an island the schedule hands ``snapshot`` to its
listener (the build records it as an ``intent_bandit`` event: shares and gain per proposal).

The run opens with the intents of ``mutation.opening`` (the improvement step by default): the
first proposals whose parent allows one get it, one proposal each, before the mix is drawn. A
child that only prepared its intent's next proposal (an improvement step's checked score) is
queued, and the next proposal makes that one on it (``follow_up``).

Only intents whose patch kind ``evolution.patch_types`` allows (with a positive probability) are
scheduled, so restricting the patch kinds still works as before. The history is rebuilt from the
store on resume: every scheduled child carries its intent in its notes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import numpy as np

from cambrian.config import MutationConfig, RunConfig
from cambrian.core.objective import MAXIMIZE, Objective
from cambrian.core.status import CandidateStatus
from cambrian.llm.bandit import reward_improvement
from cambrian.mutate.intent_bandit import IntentBandit
from cambrian.mutate.intents import INTENTS, MutationIntent
from cambrian.store.rows import CandidateRow
from cambrian.store.store import Store

PRIOR_SUCCESS_RATE = 0.5  # seed 002 §10.10: the rate assumed for a type without history
PRIOR_USES = 2.0  # how many uses that prior weighs
SNAPSHOT_EVERY = 5  # pulls on an island between snapshots of the intent bandit


def improved_on_parent(child: CandidateRow, parent_score: float | None,
                       objective: Objective) -> bool:
    """A correct child that beats its parent's score (any correct child of a failing parent)."""
    return _improved(child.status, child.score, parent_score, objective)


def _improved(status: str, score: float | None, parent_score: float | None,
              objective: Objective) -> bool:
    return status == "correct" and objective.better(score, parent_score)


class MutationSchedule:
    def __init__(
        self,
        config: MutationConfig,
        *,
        generations: int,
        patch_kinds: Iterable[str],
        objective: Objective = MAXIMIZE,
        store: Store | None = None,
        run_progress: Callable[[int], float] | None = None,
    ) -> None:
        """``run_progress(evaluated)``: the share of the run done when the run has other budgets
        than its generations (LLM calls, wall time); by default evaluated / generations."""
        allowed = set(patch_kinds)
        self.run_progress = run_progress
        self.config = config
        self.generations = generations
        self.objective = objective
        self.store = store
        self.intents: list[MutationIntent] = [
            INTENTS.get(name) for name in config.types if INTENTS.get(name).kind in allowed
        ]
        self.history: dict[str, deque[bool]] = {
            intent.name: deque(maxlen=config.window) for intent in self.intents
        }
        self.bandit = (IntentBandit([i.name for i in self.intents],
                                    exploration=config.bandit_exploration, floor=config.floor)
                       if config.intent_bandit else None)
        # Told of a snapshot of an island's bandit every SNAPSHOT_EVERY pulls there.
        self.on_snapshot: Callable[[dict[str, Any]], None] = lambda snapshot: None
        # Children that prepared a proposal of their intent (an improvement step's score,
        # checked, with its move still to write), oldest first: (child, intent, island).
        self.follow_ups: deque[tuple[int, str, int]] = deque()
        # The intents the run opens with (mutation.opening) not drawn yet.
        self.opening: deque[str] = deque(
            name for name in dict.fromkeys(config.opening) if name in self.history)

    # ------------------------------------------------------------------ the weights

    def progress(self, evaluated: int) -> float:
        if self.run_progress is not None:
            return min(1.0, max(0.0, self.run_progress(evaluated)))
        if self.generations <= 0:
            return 1.0
        return min(1.0, max(0.0, evaluated / self.generations))

    def explore_share(self, progress: float) -> float:
        """Seed 002 §10.6: p_explore = max(explore_end, explore_start * (1 - progress))."""
        return max(self.config.explore_end, self.config.explore_start * (1.0 - progress))

    def success_factor(self, name: str, island: int = 0) -> float:
        """Seed 002 §10.10, smoothed towards the uninformed prior, or the intent bandit's factor
        on ``island`` (see the module docstring)."""
        if self.bandit is not None:
            return self.bandit.factor(island, name)
        recent = self.history[name]
        rate = (sum(recent) + PRIOR_SUCCESS_RATE * PRIOR_USES) / (len(recent) + PRIOR_USES)
        return self.config.floor + rate

    def weights(self, progress: float, has_inspirations: bool = True,
                unusable: Collection[str] = (),
                multipliers: Mapping[str, float] | None = None,
                island: int = 0) -> dict[str, float]:
        """Normalised probability of each schedulable intent (empty when none is possible).
        ``unusable``: intents the parent gives nothing to work on. Without numeric settings,
        "tune the parameters only" (a small model then sends the program back unchanged, or
        invents a parameter); without an entry function to wire a step to, improve_step.
        ``multipliers``: a search phase's mix (`core.hooks.Steering`), by intent name."""
        usable = [i for i in self.intents if (has_inspirations or i.kind != "cross")
                  and i.name not in unusable]
        explore = [i for i in usable if i.phase == "explore"]
        exploit = [i for i in usable if i.phase == "exploit"]
        share = self.explore_share(progress) if explore and exploit else float(bool(explore))
        raw: dict[str, float] = {}
        for group, group_share in ((explore, share), (exploit, 1.0 - share)):
            total = sum(i.phase_share for i in group)
            for intent in group:
                raw[intent.name] = (group_share * intent.phase_share / total
                                    * self.success_factor(intent.name, island)
                                    * (multipliers or {}).get(intent.name, 1.0))
        norm = sum(raw.values())
        return {name: w / norm for name, w in raw.items()} if norm > 0 else {}

    def choose(
        self, rng: np.random.Generator, evaluated: int, has_inspirations: bool,
        unusable: Collection[str] = (), multipliers: Mapping[str, float] | None = None,
        island: int = 0,
    ) -> MutationIntent | None:
        """The intent of the next proposal; None when no scheduled intent can be used."""
        weights = self.weights(self.progress(evaluated), has_inspirations, unusable,
                               multipliers, island)
        if not weights:
            return None
        opening = next((name for name in self.opening if weights.get(name, 0.0) > 0), None)
        if opening is not None:  # mutation.opening: one proposal each, first
            self.opening.remove(opening)
            return INTENTS.get(opening)
        names = list(weights)
        probs = np.array([weights[n] for n in names])
        return INTENTS.get(names[int(rng.choice(len(names), p=probs / probs.sum()))])

    def follow_up(self, has_children: Callable[[int], bool]) -> tuple[int, str, int] | None:
        """(child, intent, island) of the oldest child that prepared a proposal nobody has made
        yet, taken off the queue; None when there is none.

        A child that only wrote an improvement step's score gains nothing until a move is
        written on it, and selection rarely comes back to a child that scores like its parent
        (a 40-call run wrote the score at call 2 and the move at call 29), so the move is the
        next proposal. A prepared child that already has children was followed up."""
        while self.follow_ups:
            child, name, island = self.follow_ups.popleft()
            if not has_children(child):
                return child, name, island
        return None

    # ------------------------------------------------------------------ outcomes

    def record(self, name: str, improved: bool, gain: float = 0.0, island: int = 0,
               *, announce: bool = True) -> None:
        """One use of intent ``name``: whether its child beat its parent and what it gained
        (fitness over max(parent, initial program); 0 for a refused reply) on ``island``."""
        if name not in self.history:
            return
        self.history[name].append(improved)
        if self.bandit is not None:
            self.bandit.record(island, name, gain)
            if announce and self.bandit.pulls(island) % SNAPSHOT_EVERY == 0:
                self.on_snapshot(self.bandit.snapshot(island))

    def _gain(self, status: str, score: float | None, parent_score: float | None,
              initial_score: float | None) -> float:
        if status != "correct":
            return 0.0
        fitness = self.objective.fitness
        return reward_improvement(fitness(score), fitness(parent_score), fitness(initial_score))

    def _initial_score(self) -> float | None:
        assert self.store is not None
        initial = self.store.candidates.find(1)
        return (initial.score if initial is not None
                and initial.status is CandidateStatus.CORRECT else None)

    def observe(self, child: CandidateRow) -> None:
        """Count a committed child towards its intent's recent success and its bandit."""
        name = child.notes.get("intent")
        if name not in self.history or self.store is None:
            return
        if child.status is CandidateStatus.CORRECT and INTENTS.get(name).prepares(child.notes):
            # Counted with the proposal it prepares (the step's move), which comes next.
            self.follow_ups.append((child.id, name, child.island or 0))
            return
        parent_score = None
        if child.parent_id is not None:
            parent = self.store.candidates.get(child.parent_id)
            parent_score = parent.score if parent.status is CandidateStatus.CORRECT else None
        self.record(name, improved_on_parent(child, parent_score, self.objective),
                    self._gain(child.status, child.score, parent_score, self._initial_score()),
                    child.island or 0)

    def rebuild(self) -> None:
        """Replay every outcome in the order the run stored it (resume): evaluated children
        when their first evaluation was committed, refused replies when they were recorded."""
        if self.store is None:
            return
        for queue in self.history.values():
            queue.clear()
        self.follow_ups.clear()
        if self.bandit is not None:
            self.bandit.clear()
        initial = self._initial_score()
        outcomes: list[tuple[float, str, bool, float, int]] = []
        for row in self.store.candidates.intent_outcomes():
            if row.intent in self.history:
                if (row.status is CandidateStatus.CORRECT
                        and INTENTS.get(row.intent).prepares(row.notes)):
                    self.follow_ups.append((row.id, row.intent, row.island or 0))
                    continue
                outcomes.append((row.evaluated_at, row.intent,
                                 _improved(row.status, row.score, row.parent_score,
                                           self.objective),
                                 self._gain(row.status, row.score, row.parent_score, initial),
                                 row.island or 0))
        for refused in self.store.candidates.list(CandidateStatus.PATCH_FAILED):
            notes = refused.notes
            if notes.get("intent") in self.history and notes.get("reply_refused"):
                outcomes.append((refused.created_at, notes["intent"], False, 0.0,
                                 refused.island or 0))
        for _, name, improved, gain, island in sorted(outcomes, key=lambda outcome: outcome[0]):
            self.record(name, improved, gain, island, announce=False)
        opened = {name for _, name, *_ in outcomes} | {name for _, name, _ in self.follow_ups}
        self.opening = deque(name for name in self.opening if name not in opened)


def build_mutation_schedule(
    config: RunConfig, store: Store, objective: Objective,
    run_progress: Callable[[int], float] | None = None,
) -> MutationSchedule | None:
    """The run's schedule rebuilt from ``store``; None when ``mutation.schedule`` is off."""
    if config.mutation.schedule == "off":
        return None
    evolution = config.evolution
    kinds = [k for k, p in zip(evolution.patch_types, evolution.patch_type_probs) if p > 0]
    schedule = MutationSchedule(config.mutation, generations=evolution.generations,
                                patch_kinds=kinds, objective=objective, store=store,
                                run_progress=run_progress)
    schedule.rebuild()
    return schedule
