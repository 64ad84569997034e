"""Cache of judge labels, keyed by (judge model, rubric version, diff hash).

Where it lives: in a Cambrian run directory, the run store's ``trace_edit_labels`` table. For
any other trace location (an exported folder, a ShinkaEvolve or OpenEvolve output) the same
table lives in a sidecar store ``<location>/trace/labels.sqlite``, so foreign traces are never
written into.

Labelling a run again with the same judge costs no LLM calls; labelling it under another judge
reuses nothing but also re-runs nothing of the search.
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

from cambrian.store.labels import CachedLabels
from cambrian.store.store import STORE_FILENAME, Store

__all__ = ["CachedLabels", "LabelCache", "cache_path"]

SIDECAR_DIR = "trace"
SIDECAR_FILE = "labels.sqlite"


def cache_path(location: Path) -> Path:
    """The SQLite file holding the cache for a run dir, a run.sqlite, or any trace folder."""
    location = Path(location)
    if location.name == STORE_FILENAME:
        return location
    if (location / STORE_FILENAME).exists():
        return location / STORE_FILENAME
    folder = location if location.is_dir() else location.parent
    return folder / SIDECAR_DIR / SIDECAR_FILE


class LabelCache:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._store = Store.open(self.path, create=True)
        self._labels = self._store.labels

    @classmethod
    def for_location(cls, location: str | Path) -> LabelCache:
        return cls(cache_path(Path(location)))

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_many(self, judge: str, rubric: str, digests: list[str]) -> dict[str, CachedLabels]:
        return self._labels.get_many(judge, rubric, digests)

    def put_many(self, judge: str, rubric: str, entries: dict[str, CachedLabels]) -> None:
        self._labels.put_many(judge, rubric, entries)

    def judges(self) -> list[tuple[str, str, int]]:
        """(judge, rubric, cached diffs) for every judge that labelled something here."""
        return self._labels.judges()
