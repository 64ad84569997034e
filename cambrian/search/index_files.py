"""The novelty index's files beside the store (``RUN_DIR/novelty_index/``), so that a resume
maps the index instead of reading every embedding from the store and signing it again (46 s for
a million programs; ``benchmarks/overhead.py --novelty-resume``).

What they hold. Per island three files of rows in the index's order: the candidate ids
(``island-N.ids``, int64), their 128-bit sign signatures (``island-N.signatures``, two uint64
each) and the float32 vectors (``island-N.vectors``, ``dim`` each); and ``header.json``: the
format, the run, the embedding model, the index's seed, the islands, the initial program, the
rows of each island with the SHA-256 of its ids and signatures, how many programs the files hold,
the last candidate whose embedding they cover and the last event their islands follow. The
vectors are memory-mapped read-only when loaded (the rows a run adds later are held in memory),
so a resume reads the ids and signatures (24 bytes a row) and not the vectors.

When they are written. When the resume snapshot is (``NoveltyIndexing.checkpoint``): the first
time whole, later only the rows added since, appended (an island's files are cut back to the
header's rows first, so a write that was cut short leaves nothing behind); the header is
replaced last, atomically. An index that does not hold exactly the store's embeddings up to its
last one (a commit rolled back after its vector was indexed) is not written.

When they are used. Only when the header's format, signature size, seed, run, model, islands and
initial program are this run's, each island's ids and signatures match their digests, its vector
file is long enough, the store holds exactly as many embeddings of the model up to the covered
candidate, no fewer events than covered, and sampled rows of every island (the first, the last
and evenly spaced ones) equal the store's vectors with signatures made again from them. The
embeddings after the covered candidate and the island events after the covered event are then
added as a full rebuild adds them. Otherwise the novelty filter rebuilds the index from the
store (one log line says why): the files are derived data, a missing, stale or damaged one costs
time, never a result.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from cambrian.search.similarity_index import SIGNATURE_BITS, SimilarityIndex
from cambrian.store.store import Store

__all__ = ["FOLDER", "FORMAT", "IndexFiles", "Unusable"]

FOLDER = "novelty_index"
FORMAT = 1
SAMPLES = 16  # rows of each island checked against the store's vectors


class Unusable(Exception):
    """Why the files cannot be used (the index is rebuilt from the store)."""


def _digest(ids: np.ndarray, signatures: np.ndarray) -> str:
    digest = hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(signatures, dtype=np.uint64).tobytes())
    return digest.hexdigest()


class IndexFiles:
    """One run's index files; remembers the rows it last read or wrote, to append after them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._written: dict[int, int] = {}  # island -> rows in its files, as last read/written
        self._token: str | None = None  # the header those rows belong to

    @classmethod
    def of(cls, store: Store) -> IndexFiles:
        return cls(Path(store.path).parent / FOLDER)

    def _path(self, island: int, kind: str) -> Path:
        return self.folder / f"island-{island}.{kind}"

    def header(self) -> dict[str, Any] | None:
        try:
            header = json.loads((self.folder / "header.json").read_text())
        except (OSError, ValueError):
            return None
        return header if isinstance(header, dict) else None

    # ------------------------------------------------------------------ writing

    def save(self, index: SimilarityIndex, described: dict[str, Any]) -> None:
        """Write the index (``described``: the header's fields about the run and coverage)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        on_disk = self.header()
        appending = (on_disk is not None and self._token is not None
                     and on_disk.get("token") == self._token)
        if not appending:
            (self.folder / "header.json").unlink(missing_ok=True)  # the files change under it
        islands: dict[str, dict[str, Any]] = {}
        written: dict[int, int] = {}
        dim = 0
        for island in index.islands():
            ids, signatures, base, tail = index.island_rows(island)
            dim = base.shape[1] if len(base) else tail.shape[1]
            done = self._written.get(island, 0) if appending else 0
            ids_array = np.asarray(ids, dtype=np.int64)
            parts = ((ids_array, "ids"), (signatures, "signatures"))
            for rows, kind in parts:
                self._write(island, kind, rows[done:], done * rows[:1].nbytes)
            self._write_vectors(island, base, tail, done, dim)
            islands[str(island)] = {"rows": len(ids), "sha256": _digest(ids_array, signatures)}
            written[island] = len(ids)
        token = uuid.uuid4().hex
        header = {**described, "format": FORMAT, "signature_bits": SIGNATURE_BITS,
                  "seed": index.seed, "dim": dim, "islands": islands, "token": token}
        temporary = self.folder / "header.json.tmp"
        temporary.write_text(json.dumps(header, sort_keys=True))
        os.replace(temporary, self.folder / "header.json")
        self._written, self._token = written, token

    def _write(self, island: int, kind: str, rows: np.ndarray, offset: int) -> None:
        """Rows after the first ``offset`` bytes of the island's file (which is cut there)."""
        path = self._path(island, kind)
        with open(path, "r+b" if offset and path.exists() else "wb") as handle:
            handle.truncate(offset)
            handle.seek(offset)
            handle.write(np.ascontiguousarray(rows).tobytes())

    def _write_vectors(self, island: int, base: np.ndarray, tail: np.ndarray, done: int,
                       dim: int) -> None:
        """The vectors from row ``done`` on, in chunks (a million rows are 1.5 GB)."""
        path = self._path(island, "vectors")
        row_bytes = dim * 4
        if done == 0 and len(base):  # a whole rewrite of the file the base may be mapped from:
            path = path.with_suffix(".vectors.tmp")  # a new file, put in its place after
        with open(path, "r+b" if done and path.exists() else "wb") as handle:
            handle.truncate(done * row_bytes)
            handle.seek(done * row_bytes)
            for part, first in ((base, 0), (tail, len(base))):
                for start in range(max(done - first, 0), len(part), 65_536):
                    handle.write(np.ascontiguousarray(part[start:start + 65_536]).tobytes())
        if path.suffix == ".tmp":
            os.replace(path, self._path(island, "vectors"))

    # ------------------------------------------------------------------ reading

    def load(self, seed: int) -> tuple[SimilarityIndex, dict[str, Any]]:
        """The index the files hold (vectors memory-mapped) and their header; ``Unusable``
        when they are absent or do not hold together (the store is checked by ``check``)."""
        header = self.header()
        if header is None:
            raise Unusable("no index files")
        if header.get("format") != FORMAT or header.get("signature_bits") != SIGNATURE_BITS:
            raise Unusable(f"format {header.get('format')!r}, this version reads {FORMAT}")
        if header.get("seed") != seed:
            raise Unusable("made with other signature planes")
        index = SimilarityIndex(seed)
        dim = int(header["dim"])
        written: dict[int, int] = {}
        for name, info in sorted(header["islands"].items(), key=lambda item: int(item[0])):
            island, rows = int(name), int(info["rows"])
            ids = np.fromfile(self._path(island, "ids"), dtype=np.int64, count=rows)
            signatures = np.fromfile(self._path(island, "signatures"), dtype=np.uint64,
                                     count=2 * rows)
            if len(ids) < rows or len(signatures) < 2 * rows:
                raise Unusable(f"island {island}'s files are shorter than the header says")
            signatures = signatures.reshape(rows, 2)
            if _digest(ids, signatures) != info.get("sha256"):
                raise Unusable(f"island {island}'s ids or signatures are damaged (digest "
                               "differs)")
            path = self._path(island, "vectors")
            if path.stat().st_size < rows * dim * 4:
                raise Unusable(f"island {island}'s vectors are shorter than the header says")
            vectors = np.memmap(path, dtype=np.float32, mode="r", shape=(rows, dim))
            index.load_island(island, ids.tolist(), signatures, vectors)
            written[island] = rows
        self._written, self._token = written, header.get("token")
        return index, header

    @property
    def token(self) -> str | None:
        """The header of the rows last read or written (None: none)."""
        return self._token

    def forget(self) -> None:
        """The files were not used: the next write replaces them whole."""
        self._written, self._token = {}, None


def check(index: SimilarityIndex, header: dict[str, Any], store: Store, model: str,
          expected: dict[str, Any]) -> None:
    """``Unusable`` unless the loaded files describe this store (see the module's text)."""
    for key, value in expected.items():
        if header.get(key) != value:
            raise Unusable(f"made for another {key.replace('_', ' ')}")
    through = int(header["embeddings_through"])
    if store.embeddings.count(model, through) != int(header["embeddings"]):
        raise Unusable("the store's embeddings up to the covered program differ in number")
    if int(header["events_through"]) > store.events.last_id():
        raise Unusable("it follows events the store does not have")
    for island in index.islands():
        ids, signatures, base, tail = index.island_rows(island)
        picks = sorted({int(r) for r in np.linspace(0, len(ids) - 1, min(SAMPLES, len(ids)))})
        stored = store.embeddings.vectors(model, [ids[row] for row in picks])
        for row in picks:
            vector = base[row] if row < len(base) else tail[row - len(base)]
            found = stored.get(ids[row])
            if found is None or not np.array_equal(found, vector):
                raise Unusable(f"program {ids[row]}'s vector differs from the store's")
        again = index.signatures_of(np.stack([stored[ids[row]] for row in picks]))
        if not np.array_equal(again, signatures[picks]):
            raise Unusable(f"island {island}'s signatures differ from the vectors'")
