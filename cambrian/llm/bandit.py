"""UCB1 over the arms of the LLM ensemble (seed 000 §3.3).

An arm is a (model, temperature) pair. The reward of a child is its improvement over the baseline
max(parent fitness, initial program fitness), clipped at zero, so an arm is credited only with
progress beyond what it started from. Rewards are divided by the largest improvement seen so far
(any arm), which makes the statistics independent of the task's score scale, and passed through
(e^x - 1) / (e - 1) so bold improvements weigh more than many small ones. A proposal that produced
no usable program counts as a pull with reward 0.

Pulls still in flight count towards an arm's visits (``submitted``), so parallel proposals do not
all pile onto the same optimistic arm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class ArmStats:
    submitted: int = 0
    improvements: list[float] = field(default_factory=list)  # raw, one per completed pull

    @property
    def completed(self) -> int:
        return len(self.improvements)

    @property
    def visits(self) -> int:
        return max(self.submitted, self.completed)


def reward_improvement(child: float | None, parent: float | None, initial: float | None) -> float:
    """Raw improvement of a child over max(parent, initial), clipped at 0 (fitness: higher better)."""
    if child is None:
        return 0.0
    references = [f for f in (parent, initial) if f is not None]
    baseline = max(references) if references else child
    return max(child - baseline, 0.0)


class UCB1Bandit:
    def __init__(self, arms: list[str], exploration: float = 1.0) -> None:
        self.exploration = exploration
        self.stats: dict[str, ArmStats] = {arm: ArmStats() for arm in arms}

    # ------------------------------------------------------------------ statistics

    def reward_scale(self) -> float:
        """The largest raw improvement seen (1 before any): rewards are transformed over it."""
        largest = max((max(s.improvements, default=0.0) for s in self.stats.values()), default=0.0)
        return largest if largest > 0 else 1.0

    def mean_reward(self, arm: str, scale: float | None = None) -> float:
        """The arm's mean transformed reward, over ``scale`` (by default this bandit's own:
        the largest improvement it has seen)."""
        stats = self.stats[arm]
        if not stats.improvements:
            return 0.0
        scale = scale if scale is not None else self.reward_scale()
        transformed = [(math.exp(r / scale) - 1.0) / (math.e - 1.0) for r in stats.improvements]
        return float(np.mean(transformed))

    def ucb_scores(self) -> dict[str, float]:
        total = sum(s.visits for s in self.stats.values())
        scores = {}
        for arm, stats in self.stats.items():
            if stats.visits == 0:
                scores[arm] = math.inf
            else:
                bonus = self.exploration * math.sqrt(2.0 * math.log(max(total, 1)) / stats.visits)
                scores[arm] = self.mean_reward(arm) + bonus
        return scores

    # ------------------------------------------------------------------ decisions

    def select(self, rng: np.random.Generator, allowed: set[str] | None = None) -> str:
        scores = self.ucb_scores()
        candidates = [a for a in scores if allowed is None or a in allowed] or list(scores)
        top = max(scores[a] for a in candidates)
        best = [a for a in candidates if scores[a] == top]
        return best[int(rng.integers(len(best)))]

    def submitted(self, arm: str) -> None:
        if arm in self.stats:
            self.stats[arm].submitted += 1

    def update(self, arm: str, improvement: float) -> None:
        """Record a completed pull. Arms no longer configured (a resumed run whose model list
        changed) are ignored."""
        if arm in self.stats:
            self.stats[arm].improvements.append(max(improvement, 0.0))

    def probabilities(self) -> dict[str, float]:
        """Share of pulls each arm received so far (UCB1 itself is deterministic)."""
        total = sum(s.visits for s in self.stats.values())
        return {a: (s.visits / total if total else 0.0) for a, s in self.stats.items()}
