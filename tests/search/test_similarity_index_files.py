"""The novelty index's files beside the store (``search/index_files.py``): a restore from them
gives the index a rebuild from the store gives, taking in the rows after them; stale, damaged or
foreign files are not used; later writes append."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cambrian.config import NoveltyConfig
from cambrian.search import similarity_index
from cambrian.search.algorithm_events import Migration
from cambrian.search.index_files import FOLDER
from cambrian.search.novelty import NoveltyFilter
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.store import Store

ISLANDS = 3


class StoredVectors:
    """The embedder the index names; its vectors are in the store already."""

    name = "test/random-24"

    async def embed(self, texts: list[str]) -> np.ndarray:
        raise AssertionError("nothing is embedded here")


def unit_rows(count: int, rng: np.random.Generator, dim: int = 24) -> np.ndarray:
    rows = rng.standard_normal((count, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def new_store(folder: Path, run_id: str = "run-1") -> Store:
    store = Store.open(folder, create=True)
    store.runs.create(run_id=run_id, task_name="t", task_dir="/t", direction="maximize",
                      language="python", config={}, seed=0, code_version="test")
    return store


def add_programs(store: Store, vectors: np.ndarray, rng: np.random.Generator) -> list[int]:
    ids = []
    with store.transaction():
        for vector in vectors:
            candidate_id = store.candidates.add(NewCandidate(
                generation=1, island=int(rng.integers(ISLANDS)), parent_id=None,
                operator="diff", status="correct", language="python"))
            store.embeddings.add(candidate_id, StoredVectors.name, vector)
            ids.append(candidate_id)
    return ids


def novelty(store: Store) -> NoveltyFilter:
    return NoveltyFilter(NoveltyConfig(judge=False), StoredVectors(), Recorder(store),
                         num_islands=ISLANDS)


def restored(store: Store) -> NoveltyFilter:
    made = novelty(store)
    made.restore()
    return made


def rebuilt(store: Store) -> NoveltyFilter:
    """The index a restore without files gives."""
    made = novelty(store)
    made._files = made.files.__class__(store.path.parent / "elsewhere")
    made.restore()
    return made


def same_index(a: NoveltyFilter, b: NoveltyFilter, queries: np.ndarray) -> None:
    assert len(a.index) == len(b.index) and a.index.islands() == b.index.islands()
    for island in a.index.islands():
        ids_a, signatures_a, base_a, tail_a = a.index.island_rows(island)
        ids_b, signatures_b, base_b, tail_b = b.index.island_rows(island)
        assert sorted(ids_a) == sorted(ids_b)
        for query in queries:  # every near-copy found, with the same cosine
            for threshold in (0.95, None):
                found_a = a.index.nearest(island, query, at_least=threshold)
                found_b = b.index.nearest(island, query, at_least=threshold)
                assert (found_a is None) == (found_b is None)
                if found_a is not None and found_b is not None:
                    assert found_a[1] == found_b[1]
                    assert found_a[0] == pytest.approx(found_b[0], abs=1e-6)


def near_copies(vectors: np.ndarray, rng: np.random.Generator, count: int = 40) -> np.ndarray:
    picks = vectors[rng.choice(len(vectors), count, replace=False)]
    noisy = picks + 0.01 * rng.standard_normal(picks.shape).astype(np.float32)
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("exact_rows", [65_536, 50])  # exact scans; signature scans
def test_a_restore_from_the_files_equals_a_rebuild_and_takes_in_the_rows_after_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exact_rows: int):
    monkeypatch.setattr(similarity_index, "EXACT_ROWS", exact_rows)
    rng = np.random.default_rng(3)
    store = new_store(tmp_path / "run")
    first = unit_rows(600, rng)
    add_programs(store, first, rng)
    written = restored(store)
    assert written.loaded_rows == 0  # no files yet: rebuilt from the store
    written.save_index()
    assert (tmp_path / "run" / FOLDER / "header.json").exists()

    loaded = restored(store)
    assert loaded.loaded_rows == len(written.index) == 602  # the initial program: 3 islands
    same_index(loaded, rebuilt(store), near_copies(first, rng))

    # Programs and a migration stored after the files: taken in from the store.
    later = unit_rows(150, rng)
    later_ids = add_programs(store, later, rng)
    Recorder(store).emit(Migration(moves=[{"candidate_id": later_ids[0], "from_island": 0,
                                           "to_island": 1}, {"candidate_id": 1,
                                                             "from_island": 0,
                                                             "to_island": 2}]))
    resumed = restored(store)
    assert resumed.loaded_rows == 602 and len(resumed.index) == len(rebuilt(store).index)
    assert resumed.index.contains(1, later_ids[0]) and resumed.index.contains(2, 1)
    everything = np.concatenate((first, later))
    same_index(resumed, rebuilt(store), near_copies(everything, rng))

    # The next write appends the rows after the files' own, then a restore reads them all.
    ids_file = tmp_path / "run" / FOLDER / "island-1.ids"
    before = ids_file.read_bytes()
    resumed.save_index()
    after = ids_file.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    again = restored(store)
    assert again.loaded_rows == len(again.index) == len(resumed.index)
    same_index(again, rebuilt(store), near_copies(everything, rng))
    # Rows the run adds to a loaded island (held in memory beside the mapped ones) are found.
    extra = unit_rows(1, rng)[0]
    again.index.add(0, 99_999, extra)
    assert again.index.nearest(0, extra, at_least=0.95) == (pytest.approx(1.0), 99_999)
    store.close()


def test_stale_damaged_or_foreign_files_are_not_used(tmp_path: Path):
    rng = np.random.default_rng(4)
    store = new_store(tmp_path / "run")
    vectors = unit_rows(200, rng)
    add_programs(store, vectors, rng)
    restored(store).save_index()
    folder = tmp_path / "run" / FOLDER

    def usable() -> bool:
        made = restored(store)
        same_index(made, rebuilt(store), near_copies(vectors, rng, 10))
        return made.loaded_rows > 0

    assert usable()
    # An embedding of a program the files cover, replaced behind their back (the initial
    # program: the first or the last row of each island, among those compared with the store).
    store.embeddings.add(1, StoredVectors.name, unit_rows(1, rng)[0])
    assert not usable()
    restored(store).save_index()  # written again whole: usable
    assert usable()
    signatures = next(folder.glob("island-*.signatures"))
    damaged = bytearray(signatures.read_bytes())
    damaged[3] ^= 0xFF
    signatures.write_bytes(bytes(damaged))
    assert not usable()
    restored(store).save_index()
    assert usable()
    next(folder.glob("island-*.vectors")).write_bytes(b"")  # cut short
    assert not usable()

    # Another run's store in the same folder: the files name the run they were made for.
    restored(store).save_index()
    store.close()
    for path in (tmp_path / "run").glob("run.sqlite*"):
        path.unlink()
    other = new_store(tmp_path / "run", run_id="run-2")
    add_programs(other, vectors, rng)
    made = restored(other)
    assert made.loaded_rows == 0 and len(made.index) == 202
    other.close()


def test_an_index_that_differs_from_the_store_is_not_written(tmp_path: Path):
    rng = np.random.default_rng(5)
    store = new_store(tmp_path / "run")
    add_programs(store, unit_rows(20, rng), rng)
    made = restored(store)
    made.index.add(0, 5_000, unit_rows(1, rng)[0])  # indexed, never stored (rolled back)
    made.save_index()
    assert not (tmp_path / "run" / FOLDER / "header.json").exists()
    store.close()
