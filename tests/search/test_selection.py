from __future__ import annotations

import numpy as np
import pytest

from cambrian.search.selection import (
    STRATEGIES,
    Member,
    SelectionContext,
    power_law_probabilities,
    select_beam,
    select_best_of_n,
    select_hill_climb,
    select_weighted,
    weighted_probabilities,
)


def members(fitness: list[float], children: list[int] | None = None) -> list[Member]:
    children = children or [0] * len(fitness)
    return [Member(i + 1, 0, f, i, c) for i, (f, c) in enumerate(zip(fitness, children))]


class TestWeighted:
    def test_equal_fitness_and_offspring_is_uniform(self):
        p = weighted_probabilities([3.0, 3.0, 3.0, 3.0], [0, 0, 0, 0], lam=10)
        assert np.allclose(p, 0.25)

    def test_offspring_penalty_is_one_over_one_plus_children(self):
        # Same fitness: only h_i = 1/(1+N_i) differs, so p is proportional to it.
        p = weighted_probabilities([1.0, 1.0, 1.0], [0, 1, 3], lam=10)
        expected = np.array([1.0, 0.5, 0.25])
        assert np.allclose(p, expected / expected.sum())

    def test_median_program_gets_half_the_sigmoid(self):
        fitness = np.array([0.0, 1.0, 2.0])
        p = weighted_probabilities(fitness, [0, 0, 0], lam=1.0)
        scale = 1.4826  # MAD of [0,1,2] is 1
        s = 1 / (1 + np.exp(-(fitness - 1.0) / scale))
        assert s[1] == pytest.approx(0.5)
        assert np.allclose(p, s / s.sum())

    def test_invariant_to_score_scale_and_shift(self):
        fitness = np.array([0.1, 0.4, 0.45, 0.9, 0.2])
        children = [2, 0, 1, 3, 0]
        p = weighted_probabilities(fitness, children, lam=10)
        q = weighted_probabilities(1000 * fitness - 7, children, lam=10)
        assert np.allclose(p, q)

    def test_better_programs_are_more_likely(self):
        p = weighted_probabilities([0.1, 0.5, 0.9], [0, 0, 0], lam=10)
        assert p[0] < p[1] < p[2]

    def test_draws_follow_the_probabilities(self):
        pool = members([0.1, 0.3, 0.35, 0.8], [0, 2, 0, 1])
        p = weighted_probabilities([m.fitness for m in pool], [m.children for m in pool], 10)
        rng = np.random.default_rng(0)
        ctx = SelectionContext(initial_id=1)
        counts = np.zeros(len(pool))
        for _ in range(20_000):
            counts[select_weighted(pool, rng, ctx).id - 1] += 1
        assert np.allclose(counts / counts.sum(), p, atol=0.015)


class TestPowerLaw:
    def test_alpha_zero_is_uniform(self):
        assert np.allclose(power_law_probabilities([5, 1, 3], alpha=0), 1 / 3)

    def test_alpha_one_is_inverse_rank(self):
        p = power_law_probabilities([0.2, 0.9, 0.5], alpha=1.0)
        # ranks: 0.9 -> 1, 0.5 -> 2, 0.2 -> 3
        weights = np.array([1 / 3, 1.0, 1 / 2])
        assert np.allclose(p, weights / weights.sum())

    def test_large_alpha_approaches_hill_climbing(self):
        p = power_law_probabilities([0.2, 0.9, 0.5], alpha=30)
        assert p[1] > 0.999


def test_hill_climb_takes_the_best_and_breaks_ties_by_age():
    pool = members([0.5, 0.9, 0.9, 0.1])
    assert select_hill_climb(pool, np.random.default_rng(0), SelectionContext(1)).id == 2


def test_best_of_n_always_returns_the_initial_program():
    pool = members([0.5, 0.9, 0.2])
    ctx = SelectionContext(initial_id=3)
    rng = np.random.default_rng(0)
    assert {select_best_of_n(pool, rng, ctx).id for _ in range(20)} == {3}


def test_beam_stays_on_its_head_until_it_has_enough_children():
    pool = members([0.5, 0.9, 0.7])
    ctx = SelectionContext(initial_id=1, num_beams=2)
    rng = np.random.default_rng(0)
    assert select_beam(pool, rng, ctx).id == 2
    pool[1].children = 1
    assert select_beam(pool, rng, ctx).id == 2
    pool[1].children = 2  # saturated: move to the best program with room
    assert select_beam(pool, rng, ctx).id == 3
    assert ctx.beam_head == 3


def test_uniform_covers_everyone():
    pool = members([0.1, 0.2, 0.3])
    rng = np.random.default_rng(1)
    seen = {STRATEGIES["uniform"](pool, rng, SelectionContext(1)).id for _ in range(200)}
    assert seen == {1, 2, 3}


def test_every_configured_strategy_is_registered():
    from typing import get_args

    from cambrian.config import ParentSelection

    assert set(get_args(ParentSelection)) == set(STRATEGIES)


def test_uniform_probabilities_ignore_fitness_and_offspring():
    pool = members([0.1, 5.0, 0.3, 9.0], [0, 7, 2, 0])
    rng = np.random.default_rng(3)
    draws = 40_000
    counts = np.bincount([STRATEGIES["uniform"](pool, rng, SelectionContext(1)).id
                          for _ in range(draws)], minlength=5)[1:]
    # Four members: 1/4 each (binomial standard error about 0.002 at this many draws).
    assert np.allclose(counts / draws, 0.25, atol=0.01)
