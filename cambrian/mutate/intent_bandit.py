"""A bandit over the mutation intents (and over an improvement step's moves), per island: which
kinds of change pay on this run, learnt from the gain each proposal realised.

Each island keeps one UCB1 bandit (`llm/bandit.py`, the LLM ensemble's: rewards are gains over
max(parent, initial program) in fitness, scaled by the largest gain seen and weighted towards
bold gains). An intent's reward is the gain of the child its proposal made; a reply that could
not be used is a pull with no gain, so an intent a model cannot carry out fades. UCB1 picks
one arm; the schedule needs weights to mix with its phase shares and a search phase's mix, so an
arm's factor is ``floor + mean reward + exploration * sqrt(2 ln(N + 2) / (n + 1))`` (N pulls on
the island, n of the arm). An arm nobody tried is taken to be as good as the best reward
(mean 1: UCB1's "try every arm once", softened into a weight), so every intent gets its early
tries; an arm that paid keeps its share, and ``floor`` keeps every arm alive.

The islands learn from each other: an island's mean for an arm is its own gains shrunk towards
the run's (all islands pooled) with the weight of ``POOLED_PRIOR_PULLS`` pulls, and the
exploration bonus counts the run's pulls. With 4 islands and 7 intents a 40-call run gives an
island about 10 pulls, too few to learn 7 arms alone; an improvement step that paid on one
island is then favoured on the others until their own pulls say otherwise.

``snapshot`` says, per island, each arm's share of the pulls, its mean gain per pull (raw, in
the task's fitness) and its pulls, which the schedule records as typed events for ``status``.
"""

from __future__ import annotations

import math
from typing import Any

from cambrian.llm.bandit import ArmStats, UCB1Bandit

OPTIMISTIC_MEAN = 1.0  # an untried arm's assumed reward: the largest a transformed gain has
POOLED_PRIOR_PULLS = 2.0  # how many of an island's own pulls the run's mean weighs


class IntentBandit:
    def __init__(self, arms: list[str], *, exploration: float = 0.5,
                 floor: float = 0.1) -> None:
        self.arms = list(dict.fromkeys(arms))
        self.exploration = exploration
        self.floor = floor
        self.islands: dict[int, UCB1Bandit] = {}
        self.pooled = UCB1Bandit(self.arms, exploration)  # every island's pulls

    def _island(self, island: int) -> UCB1Bandit:
        if island not in self.islands:
            self.islands[island] = UCB1Bandit(self.arms, self.exploration)
        return self.islands[island]

    def add_arm(self, arm: str) -> None:
        """A new arm (a move derived during the run) on every island."""
        if arm in self.arms:
            return
        self.arms.append(arm)
        for bandit in (*self.islands.values(), self.pooled):
            bandit.stats.setdefault(arm, ArmStats())

    def record(self, island: int, arm: str, gain: float) -> None:
        """One finished pull of ``arm`` on ``island`` that gained ``gain`` (fitness, >= 0)."""
        if arm not in self.arms:
            return
        for bandit in (self._island(island), self.pooled):
            bandit.stats.setdefault(arm, ArmStats())
            bandit.update(arm, gain)

    def pulls(self, island: int) -> int:
        bandit = self.islands.get(island)
        return sum(s.completed for s in bandit.stats.values()) if bandit else 0

    def factor(self, island: int, arm: str) -> float:
        """The weight factor of ``arm`` on ``island`` (see the module docstring)."""
        pooled = self.pooled.stats.get(arm)
        run_pulls = pooled.completed if pooled is not None else 0
        run_mean = self.pooled.mean_reward(arm) if run_pulls else OPTIMISTIC_MEAN
        bandit = self._island(island)
        own = bandit.stats.get(arm)
        own_pulls = own.completed if own is not None else 0
        mean = run_mean
        if own_pulls:  # on the run's scale, so that the two means compare
            own_mean = bandit.mean_reward(arm, scale=self.pooled.reward_scale())
            mean = ((own_pulls * own_mean + POOLED_PRIOR_PULLS * run_mean)
                    / (own_pulls + POOLED_PRIOR_PULLS))
        total = sum(s.completed for s in self.pooled.stats.values())
        return self.floor + mean + self.exploration * math.sqrt(
            2.0 * math.log(total + 2) / (run_pulls + 1))

    def snapshot(self, island: int) -> dict[str, Any]:
        """{"island", "pulls", "shares", "gain_per_pull", "pulls_by_arm"} of ``island``."""
        bandit = self._island(island)
        total = self.pulls(island)
        counts = {arm: s.completed for arm, s in bandit.stats.items()}
        return {
            "island": island,
            "pulls": total,
            "shares": {arm: (n / total if total else 0.0) for arm, n in counts.items()},
            "gain_per_pull": {arm: (sum(s.improvements) / s.completed if s.completed else None)
                              for arm, s in bandit.stats.items()},
            "pulls_by_arm": counts,
        }

    def clear(self) -> None:
        self.islands.clear()
        self.pooled = UCB1Bandit(self.arms, self.exploration)
