"""``Selector.programs``: every evaluated program by id, in commit order, behaving as a dict,
whose pickled form is columns rather than a million objects (``resume_snapshot.py``).

A table unpickled from a resume snapshot holds its programs as rows of those columns and makes
a program's record when it is first read (``table[id]``, ``get``, iteration over values or
items), then keeps it. So a resume of a million programs makes the few records the search
touches rather than all of them; a selector that reads every program (``values()``) makes them
all once, at its first such read, and then reads a plain dict.

A record that something besides the table refers to (a selector's island, grid or beam holds
it) is pickled as itself, so that after a resume it is still one object in both places; the
rest are written as columns, and the live table then reads them from those columns too (a
record nothing else held is made again, equal, when next read), so each snapshot encodes only
the records made since the last one. Public metrics are written as the store's JSON text, so a record
read back from a snapshot equals the one a replay of the store gives.
"""

from __future__ import annotations

import json
import sys
from collections.abc import ItemsView, Iterator, MutableMapping, ValuesView
from typing import Any

import numpy as np

from cambrian.store.codec import json_text

_MISSING = object()


def _table_only_refs() -> int:
    """The references ``__reduce__``'s loop sees on a record that only the table holds (the
    dict, the loop's variable, ``getrefcount``'s argument), measured the same way."""
    probe = {0: object()}
    for key in probe:
        value = probe[key]
        return sys.getrefcount(value)
    raise AssertionError


_TABLE_ONLY_REFS = _table_only_refs()


class ProgramTable(MutableMapping[int, Any]):
    def __init__(self, record_type: type) -> None:
        self.record_type = record_type
        self._items: dict[int, Any] = {}  # id -> record, or (when unpickled) its row
        self._columns: dict[str, Any] = {}
        self._cold = 0  # rows not made into records yet

    # ------------------------------------------------------------------ a dict

    def __getitem__(self, key: int) -> Any:
        value = self._items[key]
        if type(value) is int:
            value = self._items[key] = self._record(value)
        return value

    def get(self, key: int, default: Any = None) -> Any:  # type: ignore[override]
        value = self._items.get(key, _MISSING)
        if value is _MISSING:
            return default
        if type(value) is int:
            value = self._items[key] = self._record(value)
        return value

    def __setitem__(self, key: int, value: Any) -> None:
        old = self._items.get(key)
        if type(old) is int:
            self._cold -= 1
        self._items[key] = value

    def __delitem__(self, key: int) -> None:
        if type(self._items[key]) is int:
            self._cold -= 1
        del self._items[key]

    def __iter__(self) -> Iterator[int]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        self._make_all()
        return self._items.values()

    def items(self) -> ItemsView[int, Any]:  # type: ignore[override]
        self._make_all()
        return self._items.items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ProgramTable):
            return dict(self.items()) == dict(other.items())
        return dict(self.items()) == other if isinstance(other, dict) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ProgramTable({len(self)} programs, {self._cold} not read yet)"

    # ------------------------------------------------------------------ rows

    def _record(self, row: int) -> Any:
        c = self._columns
        self._cold -= 1
        parent = int(c["parent_id"][row])
        metrics, cases = c["metrics"][row], c["case_scores"][row]
        return self.record_type(
            id=int(c["id"][row]), parent_id=None if parent < 0 else parent,
            island=int(c["island"][row]), generation=int(c["generation"][row]),
            correct=bool(c["correct"][row]),
            fitness=None if c["no_fitness"][row] else float(c["fitness"][row]),
            metrics=json.loads(metrics) if metrics else {},
            case_scores=json.loads(cases) if cases else {},
            code_length=int(c["code_length"][row]), children=int(c["children"][row]))

    def _make_all(self) -> None:
        if not self._cold:
            return
        for key, value in self._items.items():
            if type(value) is int:
                self._items[key] = self._record(value)

    # ------------------------------------------------------------------ pickling

    def __reduce__(self) -> tuple[Any, ...]:
        n = len(self._items)
        cold_at: list[int] = []  # positions of rows never read, and their rows
        cold_rows: list[int] = []
        warm_at: list[int] = []  # positions of records written as columns, and the records
        warm: list[Any] = []
        hot: dict[int, Any] = {}  # records written as themselves
        position = -1
        items = self._items
        for key in items:
            value = items[key]
            position += 1
            if type(value) is int:
                cold_at.append(position)
                cold_rows.append(value)
            elif (type(value) is not self.record_type
                  or sys.getrefcount(value) > _TABLE_ONLY_REFS):
                hot[key] = value  # shared with another structure (or not a plain record)
            else:
                warm_at.append(position)
                warm.append(value)
        old = self._columns
        cold = np.asarray(cold_at, dtype=np.int64)
        rows = np.asarray(cold_rows, dtype=np.int64)
        at = np.asarray(warm_at, dtype=np.int64)

        def column(name: str, dtype: Any, values: list[Any]) -> np.ndarray:
            out = np.zeros(n, dtype=dtype) if dtype is not object else np.full(n, "", object)
            if len(cold):
                out[cold] = old[name][rows]
            if len(at):
                out[at] = np.array(values, dtype=dtype)
            return out

        columns = {
            "id": np.fromiter(self._items, dtype=np.int64, count=n),
            "parent_id": column("parent_id", np.int64, [
                -1 if r.parent_id is None else r.parent_id for r in warm]),
            "island": column("island", np.int64, [r.island for r in warm]),
            "generation": column("generation", np.int64, [r.generation for r in warm]),
            "correct": column("correct", bool, [r.correct for r in warm]),
            "fitness": column("fitness", np.float64, [
                0.0 if r.fitness is None else r.fitness for r in warm]),
            "no_fitness": column("no_fitness", bool, [r.fitness is None for r in warm]),
            "code_length": column("code_length", np.int64, [r.code_length for r in warm]),
            "children": column("children", np.int64, [r.children for r in warm]),
            "metrics": column("metrics", object, [
                json_text(r.metrics) if r.metrics else "" for r in warm]),
            "case_scores": column("case_scores", object, [
                json.dumps(r.case_scores) if r.case_scores else "" for r in warm]),
        }
        # The table now reads its rows from these columns: a record only the table held is
        # folded back into its row (made again, equal, when next read), so the next snapshot
        # copies it instead of encoding it again, and it no longer costs an object.
        keys = list(items)
        for position in (*cold_at, *warm_at):
            items[keys[position]] = position
        self._columns = columns
        self._cold = len(cold_at) + len(warm_at)
        return (_unpickle, (self.record_type, columns, hot))


def _unpickle(record_type: type, columns: dict[str, Any], hot: dict[int, Any]) -> ProgramTable:
    table = ProgramTable(record_type)
    table._columns = columns
    table._items = dict(zip(columns["id"].tolist(), range(len(columns["id"])), strict=True))
    table._cold = len(table._items) - len(hot)
    table._items.update(hot)  # in place: the order stays the commit order
    return table
