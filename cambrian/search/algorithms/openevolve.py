"""``openevolve``: MAP-Elites islands in a ring with a three-way parent mix.

Every island keeps a population and its own MAP-Elites grid (``map_elites.py``) over the declared
feature dimensions; a cell keeps the better program. Every ``migration_interval`` committed
evaluations, island ``i`` copies its best ``migrants`` programs to island ``i + 1`` (a ring).

A parent is drawn from a uniformly chosen island by one of three rules: *exploration* (a uniform
pick from the island's population), *exploitation* (a uniform pick from the elite archive, the
best ``archive_size`` programs of the run, preferring those on the island) or *weighted*
(fitness-proportional within the island). Inspirations are elites of other cells of the island's
grid, so the prompt shows programs that differ in the declared features.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from cambrian.config import StrictModel
from cambrian.core.events import Event
from cambrian.search.algorithm import (
    ParentSample,
    ProgramRecord,
    Selector,
    SelectorContext,
)
from cambrian.search.algorithm_events import Migration
from cambrian.search.algorithm_spec import AlgorithmSpec
from cambrian.search.algorithms.map_elites import FeatureDimension, FeatureGrid


def _default_features() -> list[FeatureDimension]:
    return [FeatureDimension(name="code_length", range=(0.0, 10_000.0), bins=10)]


class OpenEvolveOptions(StrictModel):
    """The number of islands is ``database.num_islands``."""

    # Grid axes, each with a fixed range; values outside clamp to the edge bins.
    features: list[FeatureDimension] = Field(default_factory=_default_features, min_length=1)
    exploration_ratio: float = Field(0.2, ge=0, le=1)  # uniform pick from the island
    exploitation_ratio: float = Field(0.7, ge=0, le=1)  # pick from the elite archive
    # The rest (1 - exploration - exploitation) is fitness-proportional within the island.
    archive_size: int = Field(100, ge=1)  # the elite archive: best programs of the whole run
    island_capacity: int = Field(200, ge=1)  # population per island; grid elites are kept first
    migration_interval: int = Field(20, ge=1)  # committed evaluations between ring migrations
    migrants: int = Field(1, ge=0)  # best programs each island copies to the next one
    num_inspirations: int = Field(2, ge=0)  # elites of other grid cells shown in the prompt

    @model_validator(mode="after")
    def _check_ratios(self) -> OpenEvolveOptions:
        if self.exploration_ratio + self.exploitation_ratio > 1 + 1e-9:
            raise ValueError("exploration_ratio + exploitation_ratio must not exceed 1")
        return self


@dataclass
class MapElitesIsland:
    grid: FeatureGrid
    members: dict[int, ProgramRecord] = field(default_factory=dict)

    def best(self) -> ProgramRecord | None:
        return max(self.members.values(), key=lambda p: (p.fitness, -p.id), default=None)


def _ranked(programs: list[ProgramRecord]) -> list[ProgramRecord]:
    return sorted(programs, key=lambda p: (-p.fitness, p.id))  # type: ignore[operator]


def fitness_proportional(programs: list[ProgramRecord]) -> np.ndarray:
    """Probabilities proportional to fitness shifted so the worst gets a small positive share.

    The shift and the floor are both fractions of the island's own fitness spread, so the
    probabilities do not change when every score is scaled or offset.
    """
    fitness = np.array([p.fitness for p in programs], dtype=float)
    spread = float(fitness.max() - fitness.min())
    if spread <= 0:
        return np.full(len(programs), 1.0 / len(programs))
    weights = (fitness - fitness.min()) + spread / len(programs)
    return weights / weights.sum()


class OpenEvolveSelector(Selector):
    def __init__(self, context: SelectorContext) -> None:
        super().__init__(context)
        self.options: OpenEvolveOptions = context.options
        self.islands = [MapElitesIsland(FeatureGrid(self.options.features))
                        for _ in range(context.num_islands)]
        self.commits = 0

    # ------------------------------------------------------------------ archive

    def add(self, program: ProgramRecord, rng: np.random.Generator) -> list[Event]:
        self.record(program)
        self.commits += 1
        if program.correct and program.fitness is not None:
            if program.id == self.context.initial_id:
                targets = range(len(self.islands))  # every island starts from the initial program
            else:
                targets = [program.island % len(self.islands)]
            for index in targets:
                self._insert(index, program)
        if self.commits % self.options.migration_interval == 0:
            moves = self.migrate()
            if moves:
                return [Migration(moves=moves)]
        return []

    def _insert(self, index: int, program: ProgramRecord) -> None:
        island = self.islands[index]
        island.members[program.id] = program
        island.grid.place(program)
        while len(island.members) > self.options.island_capacity:
            best = island.best()
            removable = [p for p in island.members.values() if best is None or p.id != best.id]
            # Grid elites carry the diversity: evict the worst non-elite first.
            non_elites = [p for p in removable if not island.grid.is_elite(p.id)]
            worst = min(non_elites or removable, key=lambda p: (p.fitness, -p.id))
            del island.members[worst.id]
            island.grid.remove(worst.id)

    def migrate(self) -> list[dict[str, int]]:
        """Ring migration: island i copies its best ``migrants`` programs to island i + 1."""
        if len(self.islands) < 2 or self.options.migrants == 0:
            return []
        outgoing = [_ranked(list(island.members.values()))[: self.options.migrants]
                    for island in self.islands]  # chosen before any island receives
        moves: list[dict[str, int]] = []
        for source, programs in enumerate(outgoing):
            target = (source + 1) % len(self.islands)
            for program in programs:
                if program.id in self.islands[target].members:
                    continue
                self._insert(target, program)
                moves.append({"candidate_id": program.id, "from_island": source, "to_island": target})
        return moves

    def elite_archive(self) -> list[ProgramRecord]:
        correct = [p for p in self.programs.values() if p.correct and p.fitness is not None]
        return _ranked(correct)[: self.options.archive_size]

    # ------------------------------------------------------------------ sampling

    def sample(self, rng: np.random.Generator) -> ParentSample | None:
        archive = self.elite_archive()
        if not archive:
            return None
        index = int(rng.integers(len(self.islands)))
        island = self.islands[index]
        members = sorted(island.members.values(), key=lambda p: p.id)
        if not members:  # e.g. the initial program failed and nothing landed here yet
            return ParentSample(archive[0].id, index)
        draw = rng.random()
        if draw < self.options.exploration_ratio:
            parent = members[int(rng.integers(len(members)))]
        elif draw < self.options.exploration_ratio + self.options.exploitation_ratio:
            local = [p for p in archive if p.id in island.members]
            pool = local or archive
            parent = pool[int(rng.integers(len(pool)))]
        else:
            parent = members[int(rng.choice(len(members), p=fitness_proportional(members)))]
        return ParentSample(parent.id, index, self._inspirations(island, parent, rng))

    def _inspirations(self, island: MapElitesIsland, parent: ProgramRecord,
                      rng: np.random.Generator) -> tuple[int, ...]:
        parent_cell = island.grid.cell_of(parent)
        others = [p for p in island.grid.elites()
                  if p.id != parent.id and island.grid.cell_of(p) != parent_cell]
        take = min(self.options.num_inspirations, len(others))
        if take == 0:
            return ()
        picks = [others[int(i)] for i in rng.choice(len(others), size=take, replace=False)]
        picks.sort(key=lambda p: (p.fitness, -p.id))  # strongest closest to the instructions
        return tuple(p.id for p in picks)

    def snapshot(self) -> dict[str, Any]:
        return {"programs": len(self.programs),
                "islands": [sorted(island.members) for island in self.islands]}

    def describe(self) -> dict[str, Any]:
        return {
            "programs": len(self.programs),
            "islands": {
                i: {"members": len(island.members),
                    "cells": {",".join(map(str, cell)): pid for cell, pid in island.grid.cells().items()}}
                for i, island in enumerate(self.islands)
            },
        }


SPEC = AlgorithmSpec(
    "openevolve",
    "MAP-Elites islands on fixed feature bins, ring migration, exploration/exploitation/weighted "
    "parent mix",
    OpenEvolveOptions, OpenEvolveSelector,
)
