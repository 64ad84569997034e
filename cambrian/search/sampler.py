"""Hierarchical sampling of parent and inspirations (seed 000 §3.1).

The island is drawn uniformly; the parent comes from that island's archive through the configured
strategy; inspirations are the island's top-k programs plus random samples from its elites.
Islands with no correct program yet are seeded from the initial program.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from cambrian.config import DatabaseConfig
from cambrian.search.islands import IslandArchive
from cambrian.search.selection import STRATEGIES, Member, SelectionContext


@dataclass(frozen=True)
class ParentSample:
    island: int
    parent_id: int
    top_k_ids: list[int] = field(default_factory=list)
    archive_ids: list[int] = field(default_factory=list)

    @property
    def inspiration_ids(self) -> list[int]:
        return self.archive_ids + self.top_k_ids


class IslandSampler:
    def __init__(
        self,
        archive: IslandArchive,
        config: DatabaseConfig,
        initial: Member,
        rng: np.random.Generator,
    ) -> None:
        self.archive = archive
        self.config = config
        self.initial = initial
        self.rng = rng
        self.strategy = STRATEGIES[config.parent_selection]
        self.context = SelectionContext(
            initial_id=initial.id,
            lam=config.parent_selection_lambda,
            alpha=config.power_law_alpha,
            num_beams=config.num_beams,
        )

    def sample(self) -> ParentSample:
        island = int(self.rng.integers(self.archive.num_islands))
        members = self.archive.island(island)
        if self.config.parent_selection == "best_of_n":
            return ParentSample(island=island, parent_id=self.initial.id)
        if not members:
            return ParentSample(island=island, parent_id=self.initial.id)
        parent = self.strategy(members, self.rng, self.context)
        top_k, archive_picks = self._inspirations(members, parent)
        return ParentSample(
            island=island,
            parent_id=parent.id,
            top_k_ids=[m.id for m in top_k],
            archive_ids=[m.id for m in archive_picks],
        )

    def _inspirations(self, members: list[Member], parent: Member) -> tuple[list[Member], list[Member]]:
        others = sorted(
            (m for m in members if m.id != parent.id), key=lambda m: (-m.fitness, m.id)
        )
        top_k = others[: self.config.top_k_inspirations]
        rest = others[len(top_k):]
        wanted = min(self.config.archive_inspirations, len(rest))
        if wanted == 0:
            return top_k, []
        n_elite = max(1, math.ceil(self.config.elite_ratio * len(members)))
        elites, commons = rest[:n_elite], rest[n_elite:]
        picks: list[Member] = []
        for pool in (elites, commons):
            take = min(wanted - len(picks), len(pool))
            if take > 0:
                chosen = self.rng.choice(len(pool), size=take, replace=False)
                picks.extend(pool[int(i)] for i in sorted(chosen))
        # Shown worst-to-best so the strongest example sits closest to the instructions.
        picks.sort(key=lambda m: (m.fitness, -m.id))
        top_k.sort(key=lambda m: (m.fitness, -m.id))
        return top_k, picks
