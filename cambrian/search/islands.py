"""Island subpopulations with per-island elite archives (seed 000 §3.1).

Every island starts from the initial program. Each island keeps at most ``capacity`` correct
programs; a newcomer better than the island's worst replaces it. Migration periodically moves
programs between islands, and with island elitism an island's best never leaves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cambrian.search.selection import Member


@dataclass(frozen=True)
class Migration:
    candidate_id: int
    from_island: int
    to_island: int


class IslandArchive:
    def __init__(self, num_islands: int, total_capacity: int) -> None:
        self.num_islands = num_islands
        self.capacity = max(1, math.ceil(total_capacity / num_islands))
        self._members: dict[int, Member] = {}
        self._islands: list[dict[int, Member]] = [{} for _ in range(num_islands)]

    # ------------------------------------------------------------------ queries

    def __contains__(self, candidate_id: int) -> bool:
        return candidate_id in self._members

    def __len__(self) -> int:
        return len(self._members)

    def get(self, candidate_id: int) -> Member | None:
        return self._members.get(candidate_id)

    def island(self, index: int) -> list[Member]:
        return list(self._islands[index].values())

    def all(self) -> list[Member]:
        return list(self._members.values())

    def best(self, island: int | None = None) -> Member | None:
        pool = self._islands[island].values() if island is not None else self._members.values()
        return max(pool, key=lambda m: (m.fitness, -m.id), default=None)

    # ------------------------------------------------------------------ updates

    def add(self, member: Member) -> list[int]:
        """Insert ``member`` on its island; return the ids evicted to make room (maybe itself)."""
        island = self._islands[member.island]
        if len(island) < self.capacity:
            self._put(member)
            return []
        worst = min(island.values(), key=lambda m: (m.fitness, -m.id))
        if member.fitness <= worst.fitness:
            return [member.id]
        self._drop(worst.id)
        self._put(member)
        return [worst.id]

    def restore(self, member: Member) -> None:
        """Put back a member exactly as stored (resume), without the capacity rule."""
        self._put(member)

    def migrate(self, rng: np.random.Generator, rate: float, elitism: bool) -> list[Migration]:
        """Move ``max(1, rate * size)`` programs off each island to a random other island."""
        if self.num_islands < 2 or rate <= 0:
            return []
        moves: list[Migration] = []
        for source in range(self.num_islands):
            members = list(self._islands[source].values())
            protected = {self.best(source).id} if elitism and members else set()
            movable = [m for m in members if m.id not in protected]
            if not movable:
                continue
            count = min(len(movable), max(1, int(round(rate * len(members)))))
            picks = rng.choice(len(movable), size=count, replace=False)
            for index in sorted(int(i) for i in picks):
                target = int(rng.integers(self.num_islands - 1))
                target += target >= source  # any island but the source
                moves.append(Migration(movable[index].id, source, target))
        for move in moves:
            member = self._members[move.candidate_id]
            self._drop(member.id)
            member.island = move.to_island
            self._put(member)
        return moves

    def evict_overflow(self, island: int) -> list[int]:
        """After migration an island may exceed capacity: drop its worst members."""
        evicted = []
        members = self._islands[island]
        while len(members) > self.capacity:
            best = self.best(island)
            worst = min(
                (m for m in members.values() if best is None or m.id != best.id),
                key=lambda m: (m.fitness, -m.id),
            )
            self._drop(worst.id)
            evicted.append(worst.id)
        return evicted

    # ------------------------------------------------------------------ internals

    def _put(self, member: Member) -> None:
        self._members[member.id] = member
        self._islands[member.island][member.id] = member

    def _drop(self, candidate_id: int) -> None:
        member = self._members.pop(candidate_id)
        del self._islands[member.island][candidate_id]
