"""The novelty index's two scans: exact on a small island, by sign signatures past
``EXACT_ROWS``; the second must find every program above the threshold and rank it exactly."""

from __future__ import annotations

import numpy as np
import pytest

from cambrian.search import similarity_index
from cambrian.search.similarity_index import SimilarityIndex, bits_bound


def unit_rows(count: int, rng: np.random.Generator, dim: int = 384) -> np.ndarray:
    rows = rng.standard_normal((count, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def at_cosine(vector: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector at exactly ``cosine`` to ``vector``."""
    noise = rng.standard_normal(vector.shape[0]).astype(np.float32)
    noise -= (noise @ vector) * vector
    noise /= np.linalg.norm(noise)
    return (cosine * vector + np.sqrt(1 - cosine**2) * noise).astype(np.float32)


@pytest.mark.parametrize("threshold", [0.999, 0.95, 0.85])
def test_the_signature_scan_finds_every_program_above_the_threshold(
        monkeypatch: pytest.MonkeyPatch, threshold: float):
    monkeypatch.setattr(similarity_index, "EXACT_ROWS", 100)
    rng = np.random.default_rng(1)
    vectors = unit_rows(5000, rng)
    index = SimilarityIndex()
    index.add_many(0, list(range(1, 2501)), vectors[:2500])
    for row in range(2500, 5000):  # one at a time too, as the run adds them
        index.add(0, row + 1, vectors[row])
    for source in rng.choice(5000, 60, replace=False):
        for cosine in (1 - (1 - threshold) / 2, threshold + 1e-4):  # a near-copy; at the edge
            query = at_cosine(vectors[source], cosine, rng)
            found = index.nearest(0, query, at_least=threshold)
            assert found is not None and found[1] == source + 1
            assert found[0] == pytest.approx(float(vectors[source] @ query), abs=1e-6)
    # Nothing near: the signature scan says so; the exact scan names the nearest anyway.
    stranger = unit_rows(1, rng)[0]
    assert index.nearest(0, stranger, at_least=threshold) is None
    exact = index.nearest(0, stranger)
    assert exact is not None and exact[1] == int(np.argmax(vectors @ stranger)) + 1


def test_small_islands_and_low_thresholds_scan_exactly():
    rng = np.random.default_rng(2)
    vectors = unit_rows(300, rng)
    index = SimilarityIndex()
    index.add_many(3, list(range(300)), vectors)
    query = unit_rows(1, rng)[0]
    expected = int(np.argmax(vectors @ query))
    assert index.nearest(3, query, at_least=0.95) == (pytest.approx(float(vectors[expected]
                                                                          @ query)), expected)
    assert bits_bound(0.5) is None and bits_bound(0.95) < bits_bound(0.85) < 100
    assert index.nearest(4, query) is None and len(index) == 300 and index.islands() == [3]
    index.add_many(3, [5, 7000], vectors[:2])  # 5 is there already: only 7000 joins
    assert len(index) == 301 and index.contains(3, 7000)
    assert np.array_equal(index.vector(7000), vectors[1])
