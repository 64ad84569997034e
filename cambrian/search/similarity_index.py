"""The novelty filter's index: unit vectors per island with their candidate ids, and the nearest
program to a proposal's embedding.

Up to ``EXACT_ROWS`` vectors an island is scanned exactly (one float32 matrix-vector product).
Past that the scan is bound by memory bandwidth (a million 384-d vectors are 1.5 GB, read for
every lookup), and the filter only needs the programs above its threshold: each vector also has
a 128-bit sign signature (which side of 128 fixed random hyperplanes it lies on), two vectors at
angle θ differ in each bit with probability θ/π, so a lookup counts the differing bits against
every stored signature (16 bytes a vector, two 64-bit columns streamed once), keeps the rows
within a bound and ranks those exactly. The bound is where the binomial tail at the threshold's
angle falls under 1e-9, so a program at the threshold is missed with that probability, one above
it with less (a near-copy, far above it, never in practice), while unrelated vectors are left
out (64 bits apart on average: at the threshold 0.95 about one row in a million passes, at 0.85
about one in seventy). A threshold too low for the bound to set them apart (below about 0.84)
scans exactly at any size.

With the signature scan, a lookup answers None when no program is at the threshold or above
(the nearest one's similarity is then not known).
``benchmarks/nn_alternatives.py`` and ``benchmarks/overhead.py`` measure both scans.
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["EXACT_ROWS", "SIGNATURE_BITS", "SimilarityIndex"]

EXACT_ROWS = 65_536  # an island up to this size is scanned exactly
SIGNATURE_BITS = 128
_WORDS = SIGNATURE_BITS // 64
MISS = 1e-9  # the chance that a vector at the threshold lies past the bound
_SEPARABLE = 52  # a bound past this (unrelated vectors differ in 64 +- 5.7 bits) scans exactly


@functools.lru_cache(maxsize=64)
def bits_bound(threshold: float) -> int | None:
    """The most differing bits a vector at ``threshold`` cosine or above has, bar a chance under
    ``MISS`` (the binomial tail at the threshold's angle); None when the threshold is too low
    for signatures to set unrelated vectors apart."""
    share = math.acos(max(-1.0, min(1.0, threshold))) / math.pi
    if share <= 0.0:
        return 0
    tail = 1.0
    for bits in range(SIGNATURE_BITS + 1):
        tail -= math.comb(SIGNATURE_BITS, bits) * share**bits * (1 - share) ** (
            SIGNATURE_BITS - bits)
        if tail < MISS:
            return bits if bits <= _SEPARABLE else None
    return None


class _Island:
    """One island's rows: float32 vectors, their signatures (one column per 64-bit word, so a
    lookup streams each column once) and candidate ids. The first ``len(base)`` vectors may lie
    in a read-only matrix (a memory-mapped file the index was loaded from, ``index_files.py``)
    and the rows added since in ``vectors``; the signatures and ids are all in memory."""

    def __init__(self, dim: int, capacity: int = 16, base: np.ndarray | None = None) -> None:
        self.base = base if base is not None else np.zeros((0, dim), dtype=np.float32)
        self.vectors = np.zeros((capacity, dim), dtype=np.float32)  # the rows after the base
        self.words = [np.zeros(len(self.base) + capacity, dtype=np.uint64) for _ in range(_WORDS)]
        self.ids: list[int] = []
        self._scratch: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def differing_bits(self, query: np.ndarray) -> np.ndarray:
        """The bits each row's signature differs from ``query``'s in (a view of a scratch
        buffer, valid until the next call)."""
        count = len(self.ids)
        if self._scratch is None or self._scratch[0].shape[0] < count:
            size = self.words[0].shape[0]
            self._scratch = (np.empty(size, dtype=np.uint64), np.empty(size, dtype=np.uint8),
                             np.empty(size, dtype=np.uint8))
        mixed, bits, total = (buffer[:count] for buffer in self._scratch)
        for word, column in enumerate(self.words):
            np.bitwise_xor(column[:count], query[word], out=mixed)
            np.bitwise_count(mixed, out=bits if word else total)
            if word:
                np.add(total, bits, out=total)  # at most 128: uint8 holds it
        return total

    def vector(self, row: int) -> np.ndarray:
        based = len(self.base)
        return self.base[row] if row < based else self.vectors[row - based]

    def similarities(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Cosines of ``query`` with every row (or the sorted ``rows``)."""
        based = len(self.base)
        if rows is None:
            tail = self.vectors[: len(self.ids) - based] @ query
            return tail if not based else np.concatenate((self.base @ query, tail))
        split = int(np.searchsorted(rows, based))
        if split == len(rows):
            return self.base[rows] @ query
        tail = self.vectors[rows[split:] - based] @ query
        return tail if not split else np.concatenate((self.base[rows[:split]] @ query, tail))

    def signatures(self) -> np.ndarray:
        """(rows, words) uint64: every row's signature."""
        return np.stack([column[: len(self.ids)] for column in self.words], axis=1)

    def reserve(self, rows: int) -> None:
        based, count = len(self.base), len(self.ids)
        if rows - based > self.vectors.shape[0]:
            tail = self.vectors.shape[0]
            grown = np.zeros((max(rows - based, tail + (based + tail) // 4 + 16),
                              self.vectors.shape[1]), dtype=np.float32)
            grown[: count - based] = self.vectors[: count - based]
            self.vectors = grown
        if rows > self.words[0].shape[0]:
            capacity = based + self.vectors.shape[0]
            for word, column in enumerate(self.words):
                wider = np.zeros(capacity, dtype=np.uint64)
                wider[:count] = column[:count]
                self.words[word] = wider


class SimilarityIndex:
    """Unit vectors per island with their candidate ids (a program may sit on several islands)."""

    def __init__(self, seed: int = 0) -> None:
        self._islands: dict[int, _Island] = {}
        self._members: dict[int, set[int]] = {}
        self._home: dict[int, tuple[int, int]] = {}  # candidate -> (island, row) of its vector
        self._planes: np.ndarray | None = None
        self.seed = seed

    # ------------------------------------------------------------------ signatures

    def signatures_of(self, vectors: np.ndarray) -> np.ndarray:
        """(rows, 2) uint64 sign signatures of (rows, dim) vectors."""
        if self._planes is None:  # fixed per index: the same hyperplanes for every vector
            rng = np.random.default_rng(self.seed)
            self._planes = rng.standard_normal((vectors.shape[1], SIGNATURE_BITS)).astype(
                np.float32)
        signatures = np.empty((vectors.shape[0], _WORDS), dtype=np.uint64)
        for start in range(0, vectors.shape[0], 65_536):  # bounded temporaries
            bits = (vectors[start:start + 65_536] @ self._planes) > 0
            signatures[start:start + 65_536] = np.packbits(
                bits, axis=1, bitorder="little").view(np.uint64)
        return signatures

    # ------------------------------------------------------------------ adding

    def add(self, island: int, candidate_id: int, vector: np.ndarray) -> None:
        self.add_many(island, [candidate_id], np.asarray(vector, dtype=np.float32)[None, :])

    def add_many(self, island: int, candidate_ids: list[int], vectors: np.ndarray) -> None:
        """Rows in order; a candidate already on the island is skipped."""
        members = self._members.setdefault(island, set())
        keep = [row for row, cid in enumerate(candidate_ids) if cid not in members]
        if not keep:
            return
        if len(keep) < len(candidate_ids):
            candidate_ids = [candidate_ids[row] for row in keep]
            vectors = vectors[keep]
        vectors = np.asarray(vectors, dtype=np.float32)
        rows = self._islands.get(island)
        adopted = False
        if rows is None:
            rows = self._islands[island] = _Island(vectors.shape[1], max(16, len(keep)))
            if vectors.flags.c_contiguous and len(vectors) >= 16:
                rows.vectors, adopted = vectors, True  # a restore's matrix, kept, not copied
        start = len(rows.ids)
        rows.reserve(start + len(candidate_ids))
        end = start + len(candidate_ids)
        if not adopted:
            based = len(rows.base)
            rows.vectors[start - based:end - based] = vectors
        self._put(island, rows, candidate_ids, self.signatures_of(vectors))

    def _put(self, island: int, rows: _Island, candidate_ids: list[int],
             signatures: np.ndarray) -> None:
        start = len(rows.ids)
        end = start + len(candidate_ids)
        for word, column in enumerate(rows.words):
            column[start:end] = signatures[:, word]
        for offset, candidate_id in enumerate(candidate_ids):
            self._home.setdefault(candidate_id, (island, start + offset))
        rows.ids.extend(candidate_ids)
        self._members.setdefault(island, set()).update(candidate_ids)

    # ------------------------------------------------------------------ as stored

    def island_rows(self, island: int) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
        """An island's (ids, signatures, base vectors, vectors after the base), for
        ``index_files.py``."""
        rows = self._islands[island]
        return (rows.ids, rows.signatures(), rows.base,
                rows.vectors[: len(rows.ids) - len(rows.base)])

    def load_island(self, island: int, candidate_ids: list[int], signatures: np.ndarray,
                    vectors: np.ndarray) -> None:
        """Rows as ``island_rows`` gave them (their signatures made with this index's seed),
        the vectors kept as they are (a read-only memory map, say); on an island not yet
        holding any."""
        if self._islands.get(island) is not None:
            raise ValueError(f"island {island} already holds rows")
        rows = self._islands[island] = _Island(vectors.shape[1], 16, base=vectors)
        rows.reserve(len(candidate_ids))
        self._put(island, rows, candidate_ids, signatures)

    # ------------------------------------------------------------------ reading

    def vector(self, candidate_id: int) -> np.ndarray | None:
        home = self._home.get(candidate_id)
        return None if home is None else self._islands[home[0]].vector(home[1])

    def contains(self, island: int, candidate_id: int) -> bool:
        return candidate_id in self._members.get(island, ())

    def islands(self) -> list[int]:
        return sorted(island for island, rows in self._islands.items() if rows.ids)

    def nearest(self, island: int, vector: np.ndarray,
                at_least: float | None = None) -> tuple[float, int] | None:
        """(cosine, candidate id) of the island's nearest vector. ``at_least``: only a vector at
        that cosine or above matters to the caller; on a large island the signature scan then
        answers None when no vector is that close."""
        rows = self._islands.get(island)
        if rows is None or not rows.ids:
            return None
        count = len(rows.ids)
        bound = None if at_least is None else bits_bound(at_least)
        if count <= EXACT_ROWS or bound is None:
            similarities = rows.similarities(vector)
            best = int(np.argmax(similarities))
            return float(similarities[best]), rows.ids[best]
        query = self.signatures_of(np.asarray(vector, dtype=np.float32)[None, :])[0]
        found = np.flatnonzero(rows.differing_bits(query) <= bound)
        if not len(found):
            return None
        similarities = rows.similarities(vector, found)
        best = int(np.argmax(similarities))
        if similarities[best] < at_least:  # only rows that came near by chance
            return None
        return float(similarities[best]), rows.ids[int(found[best])]

    def coverage(self) -> tuple[int, int]:
        """(programs held, the highest candidate id among them)."""
        return len(self._home), max(self._home, default=0)

    def __len__(self) -> int:
        return sum(len(rows.ids) for rows in self._islands.values())
