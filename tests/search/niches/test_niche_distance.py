"""Seed 004's diversity distance: cosine distance of per-case scores (else public metrics),
strategy 0/1, structural difference of the code, weighted and re-weighted when a term is
missing."""

from __future__ import annotations

import math

import pytest
from niche_helpers import book_of, program

from cambrian.config.niches import DistanceWeights
from cambrian.search.niches.distance import (
    DiversityDistance,
    behaviour_vector,
    combine,
    cosine_distance,
    strategy_distance,
    structural_distance,
)


def test_cosine_distance_of_score_vectors():
    assert cosine_distance({"a": 1.0, "b": 2.0}, {"a": 2.0, "b": 4.0}) == pytest.approx(0.0)
    assert cosine_distance({"a": 1.0}, {"b": 1.0}) == pytest.approx(1.0)  # missing key = 0
    assert cosine_distance({"a": 1.0, "b": 1.0}, {"a": 1.0, "b": 0.0}) == pytest.approx(
        1 - 1 / math.sqrt(2))
    assert cosine_distance({"a": 1.0}, {"a": -1.0}) == 1.0  # clamped to [0, 1]
    assert cosine_distance({"a": 0.0}, {"a": 0.0}) == 0.0
    assert cosine_distance({}, {"a": 1.0}) is None


def test_behaviour_comes_from_cases_else_numeric_public_metrics():
    with_cases = program(1, 1.0, cases={"x": 0.5})
    assert behaviour_vector(with_cases) == {"case:x": 0.5}
    metrics = program(2, 1.0, metrics={"length": 3, "ok": True, "name": "a", "bad": math.inf})
    assert behaviour_vector(metrics) == {"metric:length": 3.0}


def test_structural_and_strategy_distances():
    a = "def f():\n    return 1\n"
    assert structural_distance(a, a) == 0.0
    assert structural_distance(a, "def f():\n    return 2\n") == pytest.approx(0.5)
    assert structural_distance("x\n", "y\n") == 1.0
    assert structural_distance(None, None, 100, 50) == pytest.approx(0.5)
    assert strategy_distance("greedy", "greedy") == 0.0
    assert strategy_distance("greedy", "dynamic programming") == 1.0
    assert strategy_distance("greedy", "untagged") is None


def test_the_weighted_distance_leaves_out_what_cannot_be_computed():
    weights = DistanceWeights(strategy=0.4, behaviour=0.4, structure=0.2)
    assert combine({"strategy": 1.0, "behaviour": 0.5, "structure": 0.0}, weights) == \
        pytest.approx(0.6)
    assert combine({"strategy": None, "behaviour": 0.5, "structure": 1.0}, weights) == \
        pytest.approx((0.4 * 0.5 + 0.2) / 0.6)
    assert combine({"strategy": None, "behaviour": None, "structure": None}, weights) == 0.0


def test_diversity_distance_reads_sources_once_per_pair():
    sources = {1: "a = 1\nb = 2\n", 2: "a = 1\nb = 3\n", 3: "a = 1\nb = 2\n"}
    reads: list[int] = []

    def source_of(pid: int) -> str:
        reads.append(pid)
        return sources[pid]

    distance = DiversityDistance(DistanceWeights(), book_of({1: "greedy", 2: "greedy",
                                                             3: "dp"}).family, source_of)
    p1 = program(1, 1.0, cases={"a": 1.0, "b": 0.0})
    p2 = program(2, 1.0, cases={"a": 1.0, "b": 0.0})
    p3 = program(3, 1.0, cases={"a": 0.0, "b": 1.0})
    assert distance(p1, p1) == 0.0
    assert distance(p1, p2) == pytest.approx(0.2 * 0.5)  # same family and behaviour
    assert distance(p1, p3) == pytest.approx(0.4 + 0.4)  # same code, all else differs
    assert distance(p2, p1) == distance(p1, p2)
    assert reads == [1, 2, 1, 3]  # the symmetric pair came from the cache
    assert distance.describe(p1, p3)["strategy"] == 1.0
