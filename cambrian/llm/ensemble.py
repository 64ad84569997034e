"""The model ensemble: arms are (model, temperature) pairs.

Selection is one of ``single`` (first model only), ``fixed`` (each model by its weight, split
evenly over its temperatures) or ``ucb1`` (the bandit of seed 000 §3.3, see ``bandit.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cambrian.config import LLMConfig, ModelConfig
from cambrian.llm.bandit import ArmStats, UCB1Bandit


@dataclass(frozen=True)
class Arm:
    model: ModelConfig
    temperature: float

    @property
    def key(self) -> str:
        return f"{self.model.label}@{self.temperature:g}"


class Ensemble:
    """The arms and how one is chosen; the models themselves are reached through the gateway."""

    def __init__(self, config: LLMConfig) -> None:
        models = config.models[:1] if config.selection == "single" else config.models
        self.arms: list[Arm] = [Arm(m, t) for m in models for t in m.temperatures]
        self.by_key = {arm.key: arm for arm in self.arms}
        weights = np.array([a.model.weight / len(a.model.temperatures) for a in self.arms])
        self.weights = weights / weights.sum()
        self.bandit = (
            UCB1Bandit([a.key for a in self.arms], config.exploration)
            if config.selection == "ucb1" and len(self.arms) > 1 else None
        )

    def choose(self, rng: np.random.Generator, allowed: set[str] | None = None) -> Arm:
        """Pick the arm for one proposal; ``allowed`` narrows the choice (budget pacing)."""
        if self.bandit is not None:
            key = self.bandit.select(rng, allowed)
            self.bandit.submitted(key)
            return self.by_key[key]
        weights = np.array([w if allowed is None or a.key in allowed else 0.0
                            for a, w in zip(self.arms, self.weights)])
        if weights.sum() <= 0:
            weights = self.weights
        return self.arms[int(rng.choice(len(self.arms), p=weights / weights.sum()))]

    def observe(self, arm_key: str, improvement: float) -> None:
        if self.bandit is not None:
            self.bandit.update(arm_key, improvement)

    def probabilities(self) -> dict[str, float]:
        if self.bandit is not None:
            return self.bandit.probabilities()
        return {arm.key: float(w) for arm, w in zip(self.arms, self.weights)}

    # ------------------------------------------------------------------ persistence

    def state(self) -> dict[str, Any]:
        if self.bandit is None:
            return {}
        return {key: {"improvements": s.improvements} for key, s in self.bandit.stats.items()}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore bandit statistics by arm key: arms that are no longer configured are dropped,
        new arms start fresh (the model list may change between sessions)."""
        if self.bandit is None:
            return
        for key, saved in state.items():
            if key in self.bandit.stats:
                improvements = [float(x) for x in saved.get("improvements", [])]
                self.bandit.stats[key] = ArmStats(len(improvements), improvements)

    def snapshot(self, every: int) -> dict[str, Any] | None:
        """Arm shares and mean rewards after every ``every``-th completed pull (for
        ``cambrian status``); None between snapshots and without a bandit."""
        if self.bandit is None:
            return None
        pulls = sum(stats.completed for stats in self.bandit.stats.values())
        if not pulls or pulls % every:
            return None
        return {"pulls": pulls, "shares": self.probabilities(),
                "mean_reward": {key: self.bandit.mean_reward(key) for key in self.bandit.stats}}
