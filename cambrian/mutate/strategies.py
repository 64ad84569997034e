"""Concrete strategies for exploration proposals.

"Replace the core approach with a different algorithmic strategy" is too open for a small model:
it rewrites the same program. A ``strategy`` proposal instead gets one concrete method to build
in (seed 004 §9 "strategy layer"; the issue that asked for it measured the change in
``benchmarks/discovery.py``): a local search, a multi-start, a better construction... drawn from
a menu of the task's own strategies (``mutation.strategies``), the approaches of the problem
brief, and general methods that suit most programs optimising an output.

The draw weighs each strategy by its recent success in this run, like the intents (seed 002
§10.10: improvements over uses, smoothed towards a prior), and avoids what this lineage already
tried: a strategy one of the parent's last ancestors was built with, or that a recent child of
the parent already failed with, gets a small weight. Each child records its strategy in its
notes, so the statistics are rebuilt from the store on resume.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from cambrian.core.objective import MAXIMIZE, Objective
from cambrian.core.status import CandidateStatus
from cambrian.lang.language import Language
from cambrian.llm.bandit import reward_improvement
from cambrian.mutate.intent_bandit import IntentBandit
from cambrian.mutate.text_artifacts import TEXT_STRATEGIES
from cambrian.store.store import Store

NOTE_KEY = "strategy"
PRIOR_SUCCESS_RATE = 0.5
PRIOR_USES = 2.0
TRIED_IN_LINEAGE_FACTOR = 0.2  # weight left to a strategy this lineage already tried
LINEAGE_DEPTH = 4  # ancestors looked at
RECENT_CHILDREN = 6  # children of the parent looked at

LOCAL_SEARCH = (
    "Local search: after the program builds its solution, repeatedly make one small random "
    "change to it (move or nudge one element, or swap two), score the changed solution, and "
    "keep the change only when it scores better. Repeat for a fixed number of iterations that "
    "fits the time limit.")
SIMULATED_ANNEALING = (
    "Simulated annealing: improve the solution by small random changes, accepting a worse "
    "change with probability exp(-loss / temperature), and lower the temperature step by step "
    "over the iterations. Return the best solution seen.")
NUMERIC_OPTIMISATION = (
    "Numeric optimisation: treat the numbers that define the solution as variables and improve "
    "them all together with an optimiser (for example scipy.optimize.minimize with a penalty "
    "for broken constraints, or gradient steps), starting from the current solution.")
POPULATION_SEARCH = (
    "Population search: keep a small population of solutions; each round make new ones by "
    "randomly changing and combining the best, and keep the best few.")
# The kinds of change the move of an improvement step (cambrian/mutate/step/) makes: the
# framework's loop keeps a change when the model's score rates it higher. Each with the kinds
# of solution part it fits (``step/score_check.PART_KINDS``): a packing's coordinates gain
# nothing from a swap or a reversed segment, a tour's order nothing from a nudge.
MOVE_FITS: dict[str, frozenset[str]] = {
    "Nudge: move one element of the solution (a point, a coordinate, a value) by a small "
    "random amount.": frozenset({"numbers", "integers"}),
    "Swap: exchange two elements of the solution (two positions in an order, two values).":
        frozenset({"order", "integers", "text"}),
    "Reverse: reverse a random segment of an ordering (the 2-opt move of a tour), or mirror "
    "one part of the solution.": frozenset({"order", "text"}),
    "Relocate: take one element out and put it back at a random new place.":
        frozenset({"order", "integers", "numbers"}),
    "Several small moves: nudge a few elements at once by amounts drawn from a normal "
    "distribution whose width is a fraction of the solution's scale.": frozenset({"numbers"}),
}
STEP_MOVES: tuple[str, ...] = tuple(MOVE_FITS)


def unfitting_moves(parts: Sequence[str]) -> frozenset[str]:
    """The general moves that fit none of the solution's parts (their kinds, as the score
    check found them); none when a part's kind is unknown or not found."""
    if not parts or "other" in parts:
        return frozenset()
    return frozenset(move for move, fits in MOVE_FITS.items() if not fits & set(parts))


GENERAL_STRATEGIES: tuple[str, ...] = (
    LOCAL_SEARCH,
    SIMULATED_ANNEALING,
    "Multi-start: build many different solutions (from different random seeds or different "
    "starting layouts), score each one, and return the best.",
    "A better construction: build the solution with a smarter rule or in a smarter order (for "
    "example greedily by the largest gain first, or from a regular pattern such as a grid, "
    "rows or a hexagonal layout) instead of the current one.",
    NUMERIC_OPTIMISATION,
    POPULATION_SEARCH,
    "Adaptive steps: in the search, start with large changes and make them smaller over time, "
    "or shrink the change size when changes fail and grow it when they succeed.",
    "Speed: find the slowest part of the program and make it much faster (numpy vectorisation, "
    "caching, avoiding repeated work), then spend the time saved on more search iterations.",
)


def general_strategies(language: Language) -> tuple[str, ...]:
    """The general methods of the menu: a program's, or a text artifact's
    (``text_artifacts.py``: answer format, definitions, worked examples...)."""
    return TEXT_STRATEGIES if language.text else GENERAL_STRATEGIES


@dataclass(frozen=True)
class StrategyChoice:
    text: str

    @property
    def instruction(self) -> str:
        return (f"Build this method into the program: {self.text}\nKeep the parts of the "
                "current program that already work and rewrite the code inside the EVOLVE-BLOCK "
                "around the method. Make sure the program still returns a valid result.")


class StrategyMenu:
    def __init__(self, strategies: Sequence[str], store: Store,
                 objective: Objective = MAXIMIZE, moves: Sequence[str] = (),
                 move_bandit: IntentBandit | None = None) -> None:
        """``moves``: the kinds of change an improvement step's move can make, drawn like the
        strategies but apart from them; with ``move_bandit`` (the intent bandit's settings)
        a move is weighed by the gains its children realised, else by its success rate."""
        self.moves = list(dict.fromkeys(s.strip() for s in moves if s.strip()))
        self.move_bandit = move_bandit
        self.strategies = list(dict.fromkeys(s.strip() for s in strategies if s.strip()))
        self.store = store
        self.objective = objective

    def add(self, strategies: Sequence[str]) -> None:
        """More strategies (the problem brief's approaches, once it is written)."""
        for text in strategies:
            if text.strip() and text.strip() not in self.strategies:
                self.strategies.append(text.strip())

    # ------------------------------------------------------------------ statistics

    def success_rates(self) -> dict[str, float]:
        """Per strategy: (improved + prior) / (uses + prior uses) over the run so far; a use is
        an evaluated child or a reply that could not be used."""
        scores = self.store.candidates.scores(CandidateStatus.CORRECT)
        uses: dict[str, list[bool]] = {}
        for row in self.store.candidates.with_note(NOTE_KEY):
            if not (row.status.evaluated or row.status is CandidateStatus.PATCH_FAILED):
                continue
            parent = scores.get(row.parent_id) if row.parent_id is not None else None
            improved = (row.status is CandidateStatus.CORRECT
                        and self.objective.better(row.score, parent))
            uses.setdefault(str(row.notes[NOTE_KEY]), []).append(improved)
        return {text: (sum(outcomes) + PRIOR_SUCCESS_RATE * PRIOR_USES)
                / (len(outcomes) + PRIOR_USES) for text, outcomes in uses.items()}

    def add_moves(self, moves: Sequence[str]) -> None:
        """More moves (derived from the problem, ``meta/move_menu.py``), ahead of the others."""
        new = [m.strip() for m in moves if m.strip() and m.strip() not in self.moves]
        self.moves = new + self.moves

    def move_gains(self) -> IntentBandit | None:
        """The move bandit rebuilt from the store: one pull per evaluated child or refused
        reply of an improvement step made with a move, its gain over max(parent, initial)."""
        if self.move_bandit is None:
            return None
        bandit = IntentBandit(self.moves, exploration=self.move_bandit.exploration,
                              floor=self.move_bandit.floor)
        scores = self.store.candidates.scores(CandidateStatus.CORRECT)
        fitness = self.objective.fitness
        for row in self.store.candidates.with_note(NOTE_KEY):
            text = str(row.notes[NOTE_KEY])
            if text not in self.moves or not (row.status.evaluated
                                              or row.status is CandidateStatus.PATCH_FAILED):
                continue
            gain = 0.0
            if row.status is CandidateStatus.CORRECT:
                parent = scores.get(row.parent_id) if row.parent_id is not None else None
                gain = reward_improvement(fitness(row.score), fitness(parent),
                                          fitness(scores.get(1)))
            bandit.record(0, text, gain)
        return bandit

    def tried_by_lineage(self, parent_id: int) -> set[str]:
        """Strategies the parent's recent ancestors were built with, or its recent children
        failed with."""
        tried: set[str] = set()
        current = self.store.candidates.find(parent_id)
        for _ in range(LINEAGE_DEPTH):
            if current is None:
                break
            if NOTE_KEY in current.notes:
                tried.add(str(current.notes[NOTE_KEY]))
            current = (self.store.candidates.find(current.parent_id)
                       if current.parent_id is not None else None)
        for child in self.store.candidates.children(parent_id)[-RECENT_CHILDREN:]:
            if NOTE_KEY in child.notes:
                tried.add(str(child.notes[NOTE_KEY]))
        return tried

    # ------------------------------------------------------------------ the draw

    def weights(self, parent_id: int, moves: bool = False,
                exclude: Collection[str] = ()) -> dict[str, float]:
        """Over the menu of strategies, or (``moves``) over an improvement step's moves but
        those in ``exclude`` (unless that leaves none)."""
        rates = self.success_rates()
        gains = self.move_gains() if moves else None
        if gains is not None:
            rates = {text: gains.factor(0, text) for text in self.moves}
        tried = self.tried_by_lineage(parent_id)
        raw = {text: rates.get(text, PRIOR_SUCCESS_RATE)
               * (TRIED_IN_LINEAGE_FACTOR if text in tried else 1.0)
               for text in self._offered(self.moves if moves else self.strategies, exclude)}
        total = sum(raw.values())
        return {text: weight / total for text, weight in raw.items()} if total > 0 else {}

    @staticmethod
    def _offered(menu: Sequence[str], exclude: Collection[str]) -> Sequence[str]:
        kept = [text for text in menu if text not in exclude]
        return kept or menu

    def choose(self, rng: np.random.Generator, parent_id: int, moves: bool = False,
               exclude: Collection[str] = ()) -> StrategyChoice | None:
        weights = self.weights(parent_id, moves, exclude)
        if not weights:
            return None
        texts = list(weights)
        probs = np.array([weights[t] for t in texts])
        return StrategyChoice(texts[int(rng.choice(len(texts), p=probs / probs.sum()))])
