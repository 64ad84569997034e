from __future__ import annotations

import numpy as np
import pytest

from cambrian.config import ConfigError, RunConfig, SearchConfig
from cambrian.search.algorithm import ProgramRecord, commit_rng
from cambrian.search.registry import algorithm_names, make_selector


def build(name, options=None, fitnesses=(1.0, 5.0, 3.0, 4.0, 2.0), initial_correct=True):
    config = RunConfig(search=SearchConfig(algorithm=name, options=options or {}))
    sel = make_selector(config, initial_id=1)
    for i, f in enumerate(fitnesses, start=1):
        ok = initial_correct or i != 1
        sel.add(ProgramRecord(i, None, 0, i, ok, f if ok else None), commit_rng(0, i))
    return sel


def test_all_seed_algorithms_are_registered():
    assert {"shinka", "best-of-n", "hill-climb", "beam", "top-k", "random"} <= set(algorithm_names())


def test_best_of_n_always_mutates_the_initial_program():
    sel = build("best-of-n")
    assert {sel.sample(np.random.default_rng(s)).parent_id for s in range(10)} == {1}
    assert build("best-of-n", initial_correct=False).sample(np.random.default_rng(0)).parent_id == 2


def test_hill_climb_takes_the_best():
    assert build("hill-climb").sample(np.random.default_rng(0)).parent_id == 2


def test_top_k_uses_the_next_best_as_inspirations():
    sample = build("top-k", {"k": 2}).sample(np.random.default_rng(0))
    assert sample.parent_id == 2
    assert sample.inspiration_ids == (3, 4)  # worst to best: 3.0 then 4.0


def test_random_parent_covers_the_population():
    sel = build("random", {"k": 1})
    samples = [sel.sample(np.random.default_rng(s)) for s in range(60)]
    assert {s.parent_id for s in samples} == {1, 2, 3, 4, 5}
    assert all(len(s.inspiration_ids) == 1 and s.parent_id not in s.inspiration_ids for s in samples)


def test_beam_follows_the_best_until_it_has_width_children():
    sel = build("beam", {"width": 2})
    rng = np.random.default_rng(0)
    assert sel.sample(rng).parent_id == 2
    sel.on_child(2)
    sel.on_child(2)
    assert sel.sample(rng).parent_id == 4  # next best with room


def test_unknown_algorithm_and_options_are_config_errors():
    with pytest.raises(ConfigError, match="did you mean 'hill-climb'"):
        make_selector(RunConfig(search=SearchConfig(algorithm="hill-climbing")))
    with pytest.raises(ConfigError, match="did you mean 'width'"):
        make_selector(RunConfig(search=SearchConfig(algorithm="beam", options={"widht": 3})))
