"""``shinka`` (default): island archive with weighted parent sampling (seed 000 §3.1).

The island is drawn uniformly; the parent comes from that island's elite archive through the
configured strategy (``database.parent_selection``); inspirations are the island's top-k programs
plus random picks from its elites. Islands with no program yet start from the initial program.
Every ``migration_interval`` evaluations, programs migrate; with island elitism an island's best
never leaves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cambrian.config import DatabaseConfig, StrictModel
from cambrian.core.events import Event
from cambrian.search.algorithm import (
    ParentSample,
    ProgramRecord,
    Selector,
    SelectorContext,
)
from cambrian.search.algorithm_events import Migration
from cambrian.search.algorithm_spec import AlgorithmSpec
from cambrian.search.islands import IslandArchive
from cambrian.search.selection import STRATEGIES, SelectionContext


class ShinkaOptions(StrictModel):
    """Shinka's settings live in the top-level ``database`` section (seed 000 Appendix B)."""


class ShinkaSelector(Selector):
    def __init__(self, context: SelectorContext) -> None:
        super().__init__(context)
        db = context.database
        self.db = db
        self.archive = IslandArchive(db.num_islands, db.archive_size)
        self.strategy = STRATEGIES[db.parent_selection]
        self.selection = SelectionContext(
            initial_id=context.initial_id, lam=db.parent_selection_lambda,
            alpha=db.power_law_alpha, num_beams=db.num_beams,
        )
        self.commits = 0

    def add(self, program: ProgramRecord, rng: np.random.Generator) -> list[Event]:
        self.record(program)
        self.commits += 1
        if program.correct and program.fitness is not None:
            self.archive.add(program)  # type: ignore[arg-type]
        if self.commits % self.db.migration_interval == 0:
            moves = self.archive.migrate(rng, self.db.migration_rate, self.db.island_elitism)
            for island in {m.to_island for m in moves}:
                self.archive.evict_overflow(island)
            if moves:
                return [Migration(moves=[m.__dict__ for m in moves])]
        return []

    def _seed_parent(self) -> int:
        initial = self.programs.get(self.context.initial_id)
        if initial is not None and initial.correct:
            return initial.id
        best = self.archive.best()
        assert best is not None
        return best.id

    def sample(self, rng: np.random.Generator) -> ParentSample | None:
        if len(self.archive) == 0:
            return None
        island = int(rng.integers(self.archive.num_islands))
        members = self.archive.island(island)
        if self.db.parent_selection == "best_of_n":
            initial = self.programs.get(self.context.initial_id)
            if initial is not None and initial.correct:
                return ParentSample(initial.id, island)
        if not members:
            return ParentSample(self._seed_parent(), island)
        parent = self.strategy(members, rng, self.selection)
        top_k, picks = self._inspirations(members, parent, rng)
        return ParentSample(parent.id, island, tuple(m.id for m in picks + top_k))

    def _inspirations(self, members: list[Any], parent: Any, rng: np.random.Generator) -> tuple[list[Any], list[Any]]:
        others = sorted((m for m in members if m.id != parent.id), key=lambda m: (-m.fitness, m.id))
        top_k = others[: self.db.top_k_inspirations]
        rest = others[len(top_k):]
        wanted = min(self.db.archive_inspirations, len(rest))
        picks: list[Any] = []
        if wanted:
            n_elite = max(1, math.ceil(self.db.elite_ratio * len(members)))
            for pool in (rest[:n_elite], rest[n_elite:]):
                take = min(wanted - len(picks), len(pool))
                if take > 0:
                    chosen = rng.choice(len(pool), size=take, replace=False)
                    picks.extend(pool[int(i)] for i in sorted(chosen))
        # Shown worst-to-best so the strongest example sits closest to the instructions.
        picks.sort(key=lambda m: (m.fitness, -m.id))
        top_k.sort(key=lambda m: (m.fitness, -m.id))
        return top_k, picks

    def state(self) -> dict[str, Any]:
        return {"beam_head": self.selection.beam_head}

    def load_state(self, state: dict[str, Any]) -> None:
        self.selection.beam_head = state.get("beam_head")

    def snapshot(self) -> dict[str, Any]:
        return {"programs": len(self.programs),
                "islands": [sorted(m.id for m in self.archive.island(i))
                            for i in range(self.archive.num_islands)]}

    def describe(self) -> dict[str, Any]:
        return {
            "programs": len(self.programs),
            "islands": {i: len(self.archive.island(i)) for i in range(self.archive.num_islands)},
        }


SPEC = AlgorithmSpec(
    "shinka", "island archive, weighted parent sampling, inspirations, migration (ShinkaEvolve)",
    ShinkaOptions, ShinkaSelector,
    database_keys=frozenset(DatabaseConfig.model_fields) - {"num_islands"},
)
