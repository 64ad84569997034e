"""Baselines from the seeds' ablations (seed 000 §5, seed 003): one flat population, no islands.

* ``best-of-n``: always the initial program, no feedback between samples;
* ``hill-climb``: always the best program so far;
* ``beam``: follow the best program until it has ``width`` children, then the next best;
* ``top-k``: the best program as parent, the next ``k`` best as inspirations;
* ``random``: a uniformly random correct program, with ``k`` random inspirations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from cambrian.config import StrictModel
from cambrian.core.events import Event
from cambrian.search.algorithm import ParentSample, ProgramRecord, Selector
from cambrian.search.algorithm_spec import AlgorithmSpec
from cambrian.search.selection import SelectionContext, select_beam


class NoOptions(StrictModel):
    pass


class KOptions(StrictModel):
    k: int = Field(3, ge=0)


class BeamOptions(StrictModel):
    width: int = Field(5, ge=1)


class FlatSelector(Selector):
    """Shared bookkeeping: the correct programs, best first."""

    def add(self, program: ProgramRecord, rng: np.random.Generator) -> list[Event]:
        self.record(program)
        return []

    def ranked(self) -> list[ProgramRecord]:
        correct = [p for p in self.programs.values() if p.correct and p.fitness is not None]
        return sorted(correct, key=lambda p: (-p.fitness, p.id))  # type: ignore[operator]

    def sample(self, rng: np.random.Generator) -> ParentSample | None:
        ranked = self.ranked()
        return self.choose(ranked, rng) if ranked else None

    def choose(self, ranked: list[ProgramRecord], rng: np.random.Generator) -> ParentSample:
        raise NotImplementedError


class BestOfN(FlatSelector):
    def choose(self, ranked: list[ProgramRecord], rng: np.random.Generator) -> ParentSample:
        initial = self.programs.get(self.context.initial_id)
        return ParentSample((initial if initial and initial.correct else ranked[0]).id)


class HillClimb(FlatSelector):
    def choose(self, ranked: list[ProgramRecord], rng: np.random.Generator) -> ParentSample:
        return ParentSample(ranked[0].id)


class TopK(FlatSelector):
    def choose(self, ranked: list[ProgramRecord], rng: np.random.Generator) -> ParentSample:
        k = self.context.options.k
        return ParentSample(ranked[0].id, inspiration_ids=tuple(p.id for p in reversed(ranked[1:k + 1])))


class RandomParent(FlatSelector):
    def choose(self, ranked: list[ProgramRecord], rng: np.random.Generator) -> ParentSample:
        parent = ranked[int(rng.integers(len(ranked)))]
        others = [p for p in ranked if p.id != parent.id]
        k = min(self.context.options.k, len(others))
        picks = rng.choice(len(others), size=k, replace=False) if k else []
        return ParentSample(parent.id, inspiration_ids=tuple(others[int(i)].id for i in picks))


class Beam(FlatSelector):
    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self.selection = SelectionContext(context.initial_id, num_beams=context.options.width)

    def choose(self, ranked: list[ProgramRecord], rng: np.random.Generator) -> ParentSample:
        return ParentSample(select_beam(ranked, rng, self.selection).id)  # type: ignore[arg-type]

    def state(self) -> dict[str, Any]:
        return {"beam_head": self.selection.beam_head}

    def load_state(self, state: dict[str, Any]) -> None:
        self.selection.beam_head = state.get("beam_head")


SPECS = (
    AlgorithmSpec("best-of-n", "always mutate the initial program (no feedback)", NoOptions, BestOfN),
    AlgorithmSpec("hill-climb", "always mutate the best program so far", NoOptions, HillClimb),
    AlgorithmSpec("beam", "follow the best program until it has `width` children", BeamOptions,
                  Beam),
    AlgorithmSpec("top-k", "best program as parent, next k best as inspirations", KOptions, TopK),
    AlgorithmSpec("random", "uniformly random parent and k random inspirations", KOptions,
                  RandomParent),
)
