"""The task's objective: which direction is better, and the archive's "higher is better" fitness."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, overload

Direction = Literal["maximize", "minimize"]


@dataclass(frozen=True)
class Objective:
    direction: Direction = "maximize"

    @classmethod
    def of(cls, direction: str) -> Objective:
        if direction not in ("maximize", "minimize"):
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
        return cls(direction)  # type: ignore[arg-type]

    @property
    def maximize(self) -> bool:
        return self.direction == "maximize"

    @overload
    def fitness(self, score: float) -> float: ...
    @overload
    def fitness(self, score: None) -> None: ...
    @overload
    def fitness(self, score: float | None) -> float | None: ...

    def fitness(self, score: float | None) -> float | None:
        """Archive fitness is "higher is better" whatever the task's direction."""
        if score is None:
            return None
        return score if self.maximize else -score

    @overload
    def score(self, fitness: float) -> float: ...
    @overload
    def score(self, fitness: None) -> None: ...
    @overload
    def score(self, fitness: float | None) -> float | None: ...

    def score(self, fitness: float | None) -> float | None:
        """The task's score of an archive fitness (the inverse of :meth:`fitness`)."""
        return self.fitness(fitness)

    def better(self, a: float | None, b: float | None) -> bool:
        """Whether score ``a`` beats score ``b`` (a missing ``b`` is beaten by any score)."""
        if a is None:
            return False
        return b is None or (a > b if self.maximize else a < b)

    def gain(self, new: float, old: float) -> float:
        """How much better score ``new`` is than ``old``: positive when it beats it, negative
        when it is worse (a decrease is a gain for a minimised score)."""
        return new - old if self.maximize else old - new

    def best(self, scores: Iterable[float | None]) -> float | None:
        known = [s for s in scores if s is not None]
        if not known:
            return None
        return max(known) if self.maximize else min(known)

    @property
    def better_word(self) -> str:
        return "higher" if self.maximize else "lower"


MAXIMIZE = Objective("maximize")
MINIMIZE = Objective("minimize")
