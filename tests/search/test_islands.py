from __future__ import annotations

import numpy as np

from cambrian.search.islands import IslandArchive
from cambrian.search.selection import Member


def filled(num_islands: int = 2, per_island: int = 6, capacity: int = 40) -> IslandArchive:
    archive = IslandArchive(num_islands, capacity)
    next_id = 1
    for island in range(num_islands):
        for k in range(per_island):
            archive.add(Member(next_id, island, float(k), next_id))
            next_id += 1
    return archive


class TestArchive:
    def test_capacity_is_split_across_islands(self):
        assert IslandArchive(2, 40).capacity == 20
        assert IslandArchive(3, 40).capacity == 14

    def test_replacement_keeps_the_best(self):
        archive = IslandArchive(1, 3)
        for i, f in enumerate([0.5, 0.2, 0.8], start=1):
            assert archive.add(Member(i, 0, f, i)) == []
        assert archive.add(Member(4, 0, 0.1, 4)) == [4]  # worse than everyone: not admitted
        assert 4 not in archive
        assert archive.add(Member(5, 0, 0.6, 5)) == [2]  # replaces the worst (0.2)
        assert sorted(m.id for m in archive.island(0)) == [1, 3, 5]

    def test_islands_do_not_compete_for_room(self):
        archive = IslandArchive(2, 4)
        for i in range(1, 3):
            archive.add(Member(i, 0, 1.0, i))
        assert archive.add(Member(3, 1, -5.0, 3)) == []  # island 1 has its own room
        assert archive.best(1).id == 3


class TestMigration:
    def test_island_best_never_leaves_with_elitism(self):
        for seed in range(50):
            archive = filled()
            bests = {i: archive.best(i).id for i in range(2)}
            moves = archive.migrate(np.random.default_rng(seed), rate=0.5, elitism=True)
            assert moves, "rate 0.5 of 6 programs must move some"
            assert not {m.candidate_id for m in moves} & set(bests.values())
            for i, best_id in bests.items():
                assert archive.get(best_id).island == i

    def test_count_and_destination(self):
        archive = filled(num_islands=3, per_island=10)
        moves = archive.migrate(np.random.default_rng(3), rate=0.2, elitism=True)
        per_source = {i: sum(m.from_island == i for m in moves) for i in range(3)}
        assert per_source == {0: 2, 1: 2, 2: 2}
        assert all(m.to_island != m.from_island for m in moves)
        for move in moves:
            assert archive.get(move.candidate_id).island == move.to_island

    def test_without_elitism_the_best_can_move(self):
        moved_best = False
        for seed in range(100):
            archive = filled(per_island=2)
            best = archive.best(0).id
            moves = archive.migrate(np.random.default_rng(seed), rate=0.5, elitism=False)
            moved_best |= any(m.candidate_id == best for m in moves)
        assert moved_best

    def test_no_migration_with_one_island_or_zero_rate(self):
        assert filled(num_islands=1).migrate(np.random.default_rng(0), 0.5, True) == []
        assert filled().migrate(np.random.default_rng(0), 0.0, True) == []

    def test_overflow_after_migration_evicts_worst_not_best(self):
        archive = IslandArchive(2, 4)  # capacity 2 per island
        archive.add(Member(1, 0, 0.9, 1))
        archive.add(Member(2, 0, 0.1, 2))
        archive.restore(Member(3, 0, 0.5, 3))  # over capacity, as after migration
        assert archive.evict_overflow(0) == [2]
        assert {m.id for m in archive.island(0)} == {1, 3}
