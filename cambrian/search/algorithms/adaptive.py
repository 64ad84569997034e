"""AdaEvolve's progress signals (seed 003, "#1: AdaEvolve", levels 1 and 2).

Level 1, per-island search intensity. After each evaluation on island ``i``::

    delta = min(1, (f - best_i) / (best - worst))   if f improves on best_i  (else no delta)
    G_i  <- rho * G_i + (1 - rho) * delta**2        on an improvement
    G_i  <- rho * G_i                               otherwise (the signal fades while stuck)
    I_i   = I_min + (I_max - I_min) / (1 + sqrt(G_i + eps))

``best - worst`` is the range of fitness observed so far in the run, so ``delta`` is a fraction of
the task's own scale: multiplying or shifting every score leaves every decision unchanged. High
``G`` (recent large improvements) gives low intensity, i.e. exploitation; low ``G`` gives high
intensity, i.e. exploration.

Level 2, island scheduling by UCB: ``R_i / V_i + c * sqrt(ln(t + 1) / n_i)`` with the decayed
reward ``R_i <- rho * R_i + delta`` and decayed visit mass ``V_i <- rho * V_i + 1``; an island with
fewer than ``min_visits`` evaluations is tried first.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

EPSILON = 1e-8


@dataclass
class ScoreRange:
    """Best and worst fitness of the correct programs seen so far."""

    best: float | None = None
    worst: float | None = None

    def observe(self, fitness: float) -> None:
        self.best = fitness if self.best is None else max(self.best, fitness)
        self.worst = fitness if self.worst is None else min(self.worst, fitness)

    @property
    def span(self) -> float:
        if self.best is None or self.worst is None:
            return 0.0
        return self.best - self.worst


def normalised_improvement(fitness: float, previous_best: float | None, observed: ScoreRange) -> float:
    """``delta``: the gain over ``previous_best`` as a fraction of the observed range, in [0, 1].

    A first correct program on an island that had none counts as a full-range improvement.
    """
    if previous_best is None:
        return 1.0
    if fitness <= previous_best or observed.span <= 0:
        return 0.0
    return min(1.0, (fitness - previous_best) / observed.span)


def intensity(g: float, low: float, high: float) -> float:
    """Exploration probability from the accumulated improvement signal (level 1)."""
    return low + (high - low) / (1.0 + math.sqrt(g + EPSILON))


@dataclass
class IslandProgress:
    members: list[int] = field(default_factory=list)
    best: float | None = None  # best fitness on the island
    best_id: int | None = None
    g: float = 0.0  # accumulated improvement signal
    reward: float = 0.0  # decayed UCB reward R
    mass: float = 0.0  # decayed UCB visit mass V
    visits: int = 0  # evaluations of proposals made for this island
    since_improvement: int = 0  # evaluations on this island since its best last improved

    def seed(self, program_id: int, fitness: float) -> None:
        """Put a program on the island without counting an evaluation."""
        if program_id not in self.members:
            self.members.append(program_id)
        if self.best is None or fitness > self.best:
            self.best, self.best_id = fitness, program_id

    def observe(self, program_id: int, fitness: float | None, observed: ScoreRange,
                rho: float, min_improvement: float) -> float:
        """Take in one evaluation made for this island; returns its ``delta`` (0 if none)."""
        delta = 0.0
        if fitness is not None:
            if program_id not in self.members:
                self.members.append(program_id)
            delta = normalised_improvement(fitness, self.best, observed)
            if self.best is None or fitness > self.best:
                self.best, self.best_id = fitness, program_id
        improved = delta > min_improvement
        if not improved:
            delta = 0.0
        self.g = rho * self.g + (1.0 - rho) * delta * delta if improved else rho * self.g
        self.reward = rho * self.reward + delta
        self.mass = rho * self.mass + 1.0
        self.visits += 1
        self.since_improvement = 0 if improved else self.since_improvement + 1
        return delta

    def snapshot(self) -> dict[str, Any]:
        return asdict(self)


def ucb_island(islands: list[IslandProgress], exploration: float, min_visits: int) -> int:
    """The island to propose for next (level 2); ties go to the lower index."""
    fresh = [i for i, island in enumerate(islands) if island.visits < min_visits]
    if fresh:
        return min(fresh, key=lambda i: (islands[i].visits, i))
    total = sum(island.visits for island in islands)

    def score(i: int) -> float:
        island = islands[i]
        mean = island.reward / island.mass if island.mass > 0 else 0.0
        return mean + exploration * math.sqrt(math.log(total + 1) / island.visits)

    return max(range(len(islands)), key=lambda i: (score(i), -i))
