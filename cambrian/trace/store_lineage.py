"""Read a live run's lineage straight from its store, for :func:`cycling.lineage_deletions`.

The search asks for one candidate's deletion history at a time; loading the whole trace for that
would be wasteful, so this adapter reads only the candidates on the chain (and caches them).
"""

from __future__ import annotations

from cambrian.store.store import Store


class StoreLineage:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._rows: dict[str, tuple[str | None, str | None]] = {}

    def _row(self, candidate_id: str | int) -> tuple[str | None, str | None]:
        key = str(candidate_id)
        if key not in self._rows:
            row = self._store.candidates.find(int(key))
            parent = str(row.parent_id) if row and row.parent_id is not None else None
            self._rows[key] = (parent, row.source if row else None)
        return self._rows[key]

    def parent_of(self, candidate_id: str | int) -> str | None:
        return self._row(candidate_id)[0]

    def source_of(self, candidate_id: str | int) -> str | None:
        return self._row(candidate_id)[1]
