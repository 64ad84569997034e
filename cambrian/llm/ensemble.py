"""The model ensemble: arms are (model, temperature) pairs, sampled by fixed weights.

Each model's weight is split evenly over its temperatures, so listing more temperatures for a
model does not make that model more likely.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cambrian.config import LLMConfig, ModelConfig
from cambrian.llm.base import LLMProvider


@dataclass(frozen=True)
class Arm:
    model: ModelConfig
    temperature: float

    @property
    def key(self) -> str:
        return f"{self.model.label}@{self.temperature:g}"


class Ensemble:
    def __init__(self, config: LLMConfig, providers: dict[str, LLMProvider]) -> None:
        models = config.models[:1] if config.selection == "single" else config.models
        self.providers = providers
        self.arms: list[Arm] = [Arm(m, t) for m in models for t in m.temperatures]
        weights = np.array([a.model.weight / len(a.model.temperatures) for a in self.arms])
        self.weights = weights / weights.sum()

    def choose(self, rng: np.random.Generator) -> Arm:
        return self.arms[int(rng.choice(len(self.arms), p=self.weights))]

    def provider(self, arm: Arm) -> LLMProvider:
        return self.providers[arm.model.label]

    def probabilities(self) -> dict[str, float]:
        return {arm.key: float(w) for arm, w in zip(self.arms, self.weights)}
