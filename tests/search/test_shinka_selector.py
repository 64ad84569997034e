from __future__ import annotations

import numpy as np

from cambrian.config import DatabaseConfig, RunConfig
from cambrian.search.algorithm import ProgramRecord, commit_rng
from cambrian.search.registry import make_selector


def selector(**database):
    config = RunConfig(database=DatabaseConfig(**database))
    return make_selector(config, initial_id=1)


def feed(sel, fitnesses, islands=None, correct=None):
    for i, fitness in enumerate(fitnesses, start=1):
        island = islands[i - 1] if islands else 0
        ok = correct[i - 1] if correct else True
        sel.add(ProgramRecord(i, None, island, i, ok, fitness if ok else None), commit_rng(0, i))


def test_no_correct_program_means_no_sample():
    sel = selector()
    feed(sel, [1.0], correct=[False])
    assert sel.sample(np.random.default_rng(0)) is None


def test_empty_island_is_seeded_from_the_initial_program():
    sel = selector(num_islands=2, migration_interval=100)
    feed(sel, [1.0, 2.0, 3.0], islands=[0, 0, 0])
    samples = [sel.sample(np.random.default_rng(s)) for s in range(40)]
    assert {s.island for s in samples} == {0, 1}
    assert all(s.parent_id == 1 for s in samples if s.island == 1)


def test_failing_initial_program_seeds_empty_islands_with_the_best():
    sel = selector(num_islands=2, migration_interval=100)
    feed(sel, [0.0, 2.0, 5.0], islands=[0, 0, 0], correct=[False, True, True])
    samples = [sel.sample(np.random.default_rng(s)) for s in range(40)]
    assert all(s.parent_id == 3 for s in samples if s.island == 1)


def test_parent_and_inspirations_come_from_one_island():
    sel = selector(num_islands=2, top_k_inspirations=2, archive_inspirations=3, migration_interval=1000)
    feed(sel, [float(i) for i in range(16)], islands=[i % 2 for i in range(16)])
    rng = np.random.default_rng(0)
    for _ in range(50):
        sample = sel.sample(rng)
        island_ids = {m.id for m in sel.archive.island(sample.island)}
        assert sample.parent_id in island_ids
        assert set(sample.inspiration_ids) <= island_ids
        assert sample.parent_id not in sample.inspiration_ids
        assert len(set(sample.inspiration_ids)) == 5


def test_top_k_are_the_best_other_programs():
    sel = selector(num_islands=1, top_k_inspirations=2, archive_inspirations=0, parent_selection="uniform")
    feed(sel, [float(i) for i in range(8)])
    rng = np.random.default_rng(0)
    for _ in range(30):
        sample = sel.sample(rng)
        others = sorted((m for m in sel.archive.island(0) if m.id != sample.parent_id), key=lambda m: -m.fitness)
        assert set(sample.inspiration_ids) == {m.id for m in others[:2]}


def test_migration_happens_every_interval():
    sel = selector(num_islands=2, migration_interval=4, migration_rate=0.5)
    commits_with_migration = []
    for i in range(1, 13):
        if sel.add(ProgramRecord(i, None, i % 2, i, True, float(i)), commit_rng(0, i)):
            commits_with_migration.append(i)
    assert commits_with_migration == [4, 8, 12]


def test_replaying_the_same_history_rebuilds_the_same_archive():
    def build():
        sel = selector(num_islands=3, migration_interval=3, migration_rate=0.4, archive_size=9)
        rng = np.random.default_rng(5)
        for i in range(1, 40):
            sel.add(ProgramRecord(i, None, int(rng.integers(3)), i, bool(rng.random() > 0.2),
                                  float(rng.random())), commit_rng(7, i))
        return {i: sorted(m.id for m in sel.archive.island(i)) for i in range(3)}

    assert build() == build()


def test_beam_head_is_state_that_survives_a_restart():
    sel = selector(parent_selection="beam", num_beams=2, num_islands=1)
    feed(sel, [1.0, 3.0, 2.0])
    first = sel.sample(np.random.default_rng(0))
    restarted = selector(parent_selection="beam", num_beams=2, num_islands=1)
    feed(restarted, [1.0, 3.0, 2.0])
    restarted.load_state(sel.state())
    assert restarted.selection.beam_head == first.parent_id == 2


def test_elite_ratio_decides_which_programs_serve_as_archive_inspirations():
    """Archive inspirations are drawn first from the island's elite (the best ``elite_ratio``
    share of it), then from the rest. 11 programs, parent = the best (hill climbing), top-k = the
    next best (id 10); the archive picks come from ids 9..1."""

    def picks(elite_ratio: float, archive_inspirations: int) -> list[set[int]]:
        sel = selector(num_islands=1, parent_selection="hill_climb", top_k_inspirations=1,
                       archive_inspirations=archive_inspirations, elite_ratio=elite_ratio)
        feed(sel, [float(i) for i in range(11)])  # candidate i has fitness i - 1
        rng = np.random.default_rng(0)
        samples = [sel.sample(rng) for _ in range(300)]
        assert all(s.parent_id == 11 and 10 in s.inspiration_ids for s in samples)
        return [set(s.inspiration_ids) - {10} for s in samples]

    # elite_ratio 0.1: ceil(0.1 * 11) = 2 elite slots, so only the two next best are drawn.
    assert set().union(*picks(0.1, 1)) == {8, 9}
    # elite_ratio 1.0: the whole island is elite; every other program gets drawn.
    assert set().union(*picks(1.0, 1)) == set(range(1, 10))
    # More picks than elite slots: both elites every time, the rest from the others.
    for chosen in picks(0.1, 4):
        assert {8, 9} < chosen and len(chosen) == 4


def test_uniform_parent_selection_gives_every_island_member_equal_odds():
    sel = selector(num_islands=1, parent_selection="uniform", top_k_inspirations=0,
                   archive_inspirations=0)
    feed(sel, [0.1, 9.0, 0.3, 5.0, 2.0])
    sel.on_child(2)  # offspring counts do not matter either
    sel.on_child(2)
    rng = np.random.default_rng(11)
    draws = 25_000
    counts = np.bincount([sel.sample(rng).parent_id for _ in range(draws)], minlength=6)[1:]
    assert np.allclose(counts / draws, 0.2, atol=0.012)
