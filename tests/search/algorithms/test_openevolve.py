from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from algorithm_helpers import build_selector, feed, record, run_algorithm
from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import stored_events

from cambrian.config import ConfigError
from cambrian.search.algorithms.map_elites import FeatureDimension, FeatureGrid, bin_index
from cambrian.search.algorithms.openevolve import fitness_proportional

LENGTH_4_BINS = {"name": "code_length", "range": [0, 100], "bins": 4}


def test_bins_are_fixed_and_outside_values_clamp_to_the_edges():
    assert [bin_index(v, 0, 100, 4) for v in (-5, 0, 24.9, 25, 50, 99.9, 100, 1e9)] == \
        [0, 0, 0, 1, 2, 3, 3, 3]
    grid = FeatureGrid([FeatureDimension(name="code_length", range=(0, 100), bins=4)])
    small = record(2, 1.0, code_length=10)
    assert grid.cell_of(small) == (0,)
    grid.place(record(3, 1.0, code_length=10_000))  # far outside: the last bin, no rescaling
    assert grid.cell_of(record(4, 1.0, code_length=99)) == (3,)
    assert grid.cell_of(small) == (0,)  # a huge program did not move anyone's cell


def test_a_cell_keeps_the_better_program_and_ties_keep_the_incumbent():
    grid = FeatureGrid([FeatureDimension(name="code_length", range=(0, 100), bins=4)])
    assert grid.place(record(2, 1.0, code_length=10))
    assert not grid.place(record(3, 0.5, code_length=20))  # same cell, worse
    assert not grid.place(record(4, 1.0, code_length=5))  # same cell, equal
    assert grid.occupant((0,)).id == 2
    assert grid.place(record(5, 2.0, code_length=24))
    assert grid.occupant((0,)).id == 5
    assert grid.place(record(6, -3.0, code_length=60))  # another cell: kept whatever its fitness
    assert grid.cells() == {(0,): 5, (2,): 6}


def test_score_and_metric_features_and_programs_without_a_feature():
    grid = FeatureGrid([FeatureDimension(name="score", range=(0, 10), bins=5),
                        FeatureDimension(name="value", range=(0, 1), bins=2)])
    assert grid.cell_of(record(2, 7.0, metrics={"value": 0.9})) == (3, 1)
    assert grid.cell_of(record(3, 7.0, metrics={"other": 1})) is None
    assert not grid.place(record(3, 7.0, metrics={"other": 1}))


def test_invalid_options_are_config_errors():
    with pytest.raises(ConfigError, match="must not exceed 1"):
        build_selector("openevolve", {"exploration_ratio": 0.5, "exploitation_ratio": 0.6})
    with pytest.raises(ConfigError, match="lo < hi"):
        build_selector("openevolve", {"features": [{"name": "score", "range": [1, 1]}]})


def test_ring_migration_sends_each_island_best_to_the_next():
    sel = build_selector("openevolve", {"features": [LENGTH_4_BINS], "migration_interval": 4},
                         num_islands=3)
    assert feed(sel, record(1, 1.0), record(2, 5.0, island=0), record(3, 7.0, island=1)) == []
    events = feed(sel, record(4, 3.0, island=2))  # the 4th commit triggers the migration
    assert [e.kind for e in events] == ["migration"]
    assert events[0].payload()["moves"] == [
        {"candidate_id": 2, "from_island": 0, "to_island": 1},
        {"candidate_id": 3, "from_island": 1, "to_island": 2},
        {"candidate_id": 4, "from_island": 2, "to_island": 0},
    ]
    assert sorted(sel.islands[0].members) == [1, 2, 4]
    assert sorted(sel.islands[1].members) == [1, 2, 3]
    assert sorted(sel.islands[2].members) == [1, 3, 4]


def test_exploration_picks_uniformly_from_the_island():
    sel = build_selector("openevolve", {"features": [LENGTH_4_BINS], "exploration_ratio": 1.0,
                                        "exploitation_ratio": 0.0}, num_islands=2)
    feed(sel, record(1, 1.0), *(record(i, float(i), island=i % 2) for i in range(2, 9)))
    rng = np.random.default_rng(0)
    picks = [sel.sample(rng) for _ in range(200)]
    for sample in picks:
        assert sample.parent_id in sel.islands[sample.island].members
    assert {s.parent_id for s in picks if s.island == 0} == {1, 2, 4, 6, 8}


def test_exploitation_picks_from_the_elite_archive():
    sel = build_selector("openevolve", {"features": [LENGTH_4_BINS], "exploration_ratio": 0.0,
                                        "exploitation_ratio": 1.0, "archive_size": 2})
    feed(sel, record(1, 1.0), *(record(i, float(i)) for i in range(2, 9)))
    rng = np.random.default_rng(0)
    assert {sel.sample(rng).parent_id for _ in range(100)} == {7, 8}


def test_weighted_selection_is_fitness_proportional_and_scale_free():
    programs = [record(i, f) for i, f in enumerate([1.0, 2.0, 4.0], start=1)]
    probabilities = fitness_proportional(programs)
    scaled = fitness_proportional([record(p.id, p.fitness * 1000 - 7) for p in programs])
    assert np.allclose(probabilities, scaled)
    assert probabilities[0] < probabilities[1] < probabilities[2]
    sel = build_selector("openevolve", {"features": [LENGTH_4_BINS], "exploration_ratio": 0.0,
                                        "exploitation_ratio": 0.0})
    feed(sel, *programs)
    rng = np.random.default_rng(1)
    counts = Counter(sel.sample(rng).parent_id for _ in range(3000))
    for index, program in enumerate(programs):
        assert counts[program.id] / 3000 == pytest.approx(probabilities[index], abs=0.03)


def test_inspirations_are_elites_of_other_cells():
    sel = build_selector("openevolve", {"features": [LENGTH_4_BINS], "num_inspirations": 2})
    feed(sel, record(1, 1.0, code_length=10), record(2, 2.0, code_length=15),
         record(3, 0.5, code_length=40), record(4, 0.7, code_length=60), record(5, 0.9, code_length=90))
    grid = sel.islands[0].grid
    rng = np.random.default_rng(0)
    for _ in range(50):
        sample = sel.sample(rng)
        parent_cell = grid.cell_of(sel.programs[sample.parent_id])
        assert len(sample.inspiration_ids) == 2
        for pid in sample.inspiration_ids:
            assert grid.is_elite(pid) and grid.cell_of(sel.programs[pid]) != parent_cell
    assert not grid.is_elite(1)  # program 2 took its cell


def test_openevolve_run_improves_and_resume_rebuilds_the_grid(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        run = run_algorithm(
            task, tmp_path / "run", llm, "openevolve", 8, "database.num_islands=2",
            "search.options.migration_interval=3",
            "search.options.features=[{name: code_length, range: [0, 400], bins: 4}, "
            "{name: value, range: [0, 60], bins: 6}]",
        )
    assert run.summary.evaluations == 8
    assert run.summary.best_score > run.summary.initial_score
    assert stored_events(run.store, "migration")
    islands = run.live["describe"]["islands"]
    assert sum(len(island["cells"]) for island in islands.values()) >= 3
    assert run.resumed == run.live
