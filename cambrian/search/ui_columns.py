"""The web UI's read models kept as columns beside the store (``RUN_DIR/ui_columns/``), so that
a UI process that opens a run of a million programs computes its first overview from arrays
instead of reading every row (``cambrian/ui/column_models.py``).

What they hold (one ``.npy`` file an array in ``ui_columns/<token>/``, with ``tables.json``):
per candidate up to a watermark, in id order, its parent, island, status, score, model,
intent, operator, generation, whether it has a program (and a source hash), its lines, its
failure reason (``store/browse.py``'s ``failure_reason``) and a correct one's numeric public
metrics; per evaluation row its candidate, time, duration, status and stage; per LLM call the
ledger's fields (time, cost, tokens, latency, model, purpose, failed or retried) and the failed
calls' errors. Names (models, intents, reasons, metrics...) are tables the columns index. The
watermark: the last candidate such that none up to it is pending (a finished candidate's row no
longer changes), the last evaluation row and the last LLM call read. ``header.json`` names the
run, the watermark and the token.

When they are written. By the run, when its resume snapshot is (``UIColumnsHook.checkpoint``):
the first time from the whole store (19 CPU-s for a million programs), later the rows after the
watermark appended to the columns read back; each write goes into a new token folder, the
header is replaced last, atomically, then the older folders are removed. A failed write only
logs a line.

When they are used. Only when the header's format and run are this run's, no candidate up to
the watermark is pending and sampled rows of each kind (16, evenly spread, the last included)
equal the store's; the arrays are then memory-mapped read-only and the reader adds the rows
after the watermark (``extend``). Otherwise the UI reads the store as it did without them: the
files are derived data, never a result. The UI only reads them; only the run writes them.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from cambrian.core.hooks import LoopHook
from cambrian.core.status import CandidateStatus
from cambrian.llm.health import RETRIED_MARK
from cambrian.store.browse import failure_reason
from cambrian.store.codec import loads
from cambrian.store.store import Store

__all__ = ["FOLDER", "FORMAT", "Columns", "UIColumnsHook", "extend", "load", "path_of", "read",
           "read_checked", "write"]

log = logging.getLogger(__name__)

FOLDER = "ui_columns"
HEADER = "header.json"
TABLES_FILE = "tables.json"
FORMAT = 2  # 2: a reason reads the first REASON_CHARS of an error, not 240
STATUSES: tuple[str, ...] = tuple(s.value for s in CandidateStatus)
FAILED = frozenset({"incorrect", "patch_failed", "rejected", "screened", "duplicate"})
TABLES = ("model", "intent", "operator", "reason", "metric", "eval_status", "purpose")


class Unusable(Exception):
    """Why the columns cannot be used (the UI reads the store instead)."""


def _i64(values: list[Any]) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def _f64(values: list[Any]) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value) if math.isfinite(value) else math.nan


@dataclass
class Columns:
    """The read models' rows as columns (see the module's text). ``None`` of a nullable
    integer is -1 (parent, island, a name's index), of a float NaN."""

    candidate_mark: int = 0
    evaluation_mark: int = 0
    call_mark: int = 0
    names: dict[str, list[str]] = field(default_factory=lambda: {t: [] for t in TABLES})
    failed_calls: list[tuple[str, float, str]] = field(default_factory=list)
    derived: dict[Any, Any] = field(default_factory=dict)  # what readers work out from them
    # candidates, id order
    id: np.ndarray = field(default_factory=lambda: _i64([]))
    parent: np.ndarray = field(default_factory=lambda: _i64([]))
    island: np.ndarray = field(default_factory=lambda: _i64([]))
    status: np.ndarray = field(default_factory=lambda: _i64([]))  # index in STATUSES
    score: np.ndarray = field(default_factory=lambda: _f64([]))
    model: np.ndarray = field(default_factory=lambda: _i64([]))
    intent: np.ndarray = field(default_factory=lambda: _i64([]))
    operator: np.ndarray = field(default_factory=lambda: _i64([]))
    generation: np.ndarray = field(default_factory=lambda: _i64([]))
    hashed: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    sized: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    lines: np.ndarray = field(default_factory=lambda: _i64([]))
    reason: np.ndarray = field(default_factory=lambda: _i64([]))
    metrics: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    # evaluation rows, id order
    eval_id: np.ndarray = field(default_factory=lambda: _i64([]))
    eval_candidate: np.ndarray = field(default_factory=lambda: _i64([]))
    eval_at: np.ndarray = field(default_factory=lambda: _f64([]))
    eval_duration: np.ndarray = field(default_factory=lambda: _f64([]))
    eval_status: np.ndarray = field(default_factory=lambda: _i64([]))
    eval_main: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    # LLM calls, id order
    call_id: np.ndarray = field(default_factory=lambda: _i64([]))
    call_at: np.ndarray = field(default_factory=lambda: _f64([]))
    call_cost: np.ndarray = field(default_factory=lambda: _f64([]))
    call_prompt: np.ndarray = field(default_factory=lambda: _i64([]))
    call_completion: np.ndarray = field(default_factory=lambda: _i64([]))
    call_cached: np.ndarray = field(default_factory=lambda: _i64([]))
    call_latency: np.ndarray = field(default_factory=lambda: _f64([]))
    call_model: np.ndarray = field(default_factory=lambda: _i64([]))
    call_purpose: np.ndarray = field(default_factory=lambda: _i64([]))
    call_flags: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))

    CANDIDATE = ("id", "parent", "island", "status", "score", "model", "intent", "operator",
                 "generation", "hashed", "sized", "lines", "reason", "metrics")
    EVALUATION = ("eval_id", "eval_candidate", "eval_at", "eval_duration", "eval_status",
                  "eval_main")
    CALL = ("call_id", "call_at", "call_cost", "call_prompt", "call_completion", "call_cached",
            "call_latency", "call_model", "call_purpose", "call_flags")

    def __post_init__(self) -> None:
        self._lookup = {(t, n): i for t in TABLES for i, n in enumerate(self.names[t])}

    def index(self, table: str, name: str | None) -> int:
        """The index of ``name`` in ``table`` (added at its end when new); -1 for None."""
        if name is None:
            return -1
        found = self._lookup.get((table, name))
        if found is None:
            found = len(self.names[table])
            self.names[table].append(name)
            self._lookup[(table, name)] = found
        return found

    def arrays(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)
                if isinstance(getattr(self, f.name), np.ndarray)}


def _append(new: Columns, base: Columns, added: dict[str, np.ndarray], any_added: bool) -> None:
    """Each of ``new``'s columns named in ``added``: ``base``'s with ``added``'s rows after it
    (``base``'s array itself when nothing was added)."""
    for name, values in added.items():
        setattr(new, name, np.concatenate([getattr(base, name), values]) if any_added
                else getattr(base, name))


def extend(store: Store, base: Columns) -> Columns:
    """``base`` with every row the store holds after its watermark (candidates, pending ones
    too, evaluation rows and LLM calls): the columns of the store as it is now. ``base`` is
    left as it was."""
    new = Columns(base.candidate_mark, base.evaluation_mark, base.call_mark,
                  {t: list(base.names[t]) for t in TABLES}, list(base.failed_calls))
    rows = store.column_rows.candidates(base.candidate_mark)
    metric_rows: list[dict[str, float]] = []
    cand: dict[str, list[Any]] = {name: [] for name in Columns.CANDIDATE if name != "metrics"}
    status_of = {name: n for n, name in enumerate(STATUSES)}
    for (i, parent, island, status, score, model, intent, operator, generation, hashed, sized,
         lines, error, public) in rows:
        cand["id"].append(i)
        cand["parent"].append(-1 if parent is None else parent)
        cand["island"].append(-1 if island is None else island)
        cand["status"].append(status_of[status])
        cand["score"].append(math.nan if score is None else score)
        cand["model"].append(new.index("model", model))
        cand["intent"].append(new.index("intent", None if intent is None else str(intent)))
        cand["operator"].append(new.index("operator", operator))
        cand["generation"].append(generation)
        cand["hashed"].append(bool(hashed))
        cand["sized"].append(bool(sized))
        cand["lines"].append(lines or 0)
        cand["reason"].append(new.index("reason", failure_reason(status, error or ""))
                              if status in FAILED else -1)
        metrics: dict[str, float] = {}
        if public is not None:
            for name, value in (loads(public, {}) or {}).items():
                if not math.isnan(number := _number(value)):
                    metrics[str(name)] = number
                    new.index("metric", str(name))
        metric_rows.append(metrics)
    width = len(new.names["metric"])
    metric_index = {name: n for n, name in enumerate(new.names["metric"])}
    added = np.full((len(rows), width), math.nan)
    for r, metrics in enumerate(metric_rows):
        for name, number in metrics.items():
            added[r, metric_index[name]] = number
    old = base.metrics.reshape(len(base.id), -1) if len(base.id) else np.zeros((0, 0))
    if old.shape[1] < width:
        old = np.hstack([old, np.full((len(base.id), width - old.shape[1]), math.nan)])
    new.metrics = np.vstack([old, added]) if rows else old
    dtypes = {"score": np.float64, "hashed": bool, "sized": bool}
    _append(new, base, {name: np.asarray(values, dtype=dtypes.get(name, np.int64))
                        for name, values in cand.items()}, bool(rows))
    evaluations = store.column_rows.evaluations(base.candidate_mark, base.evaluation_mark)
    columns = list(zip(*evaluations)) if evaluations else [[]] * 6
    ev = {"eval_id": _i64(columns[0]), "eval_candidate": _i64(columns[1]),
          "eval_at": _f64(columns[2]),
          "eval_duration": _f64([math.nan if d is None else d for d in columns[3]]),
          "eval_status": _i64([new.index("eval_status", s) for s in columns[4]]),
          "eval_main": np.asarray(columns[5], dtype=bool)}
    _append(new, base, ev, bool(evaluations))
    if len(base.eval_id) and len(ev["eval_id"]):  # base rows up to the mark, then the rest
        order = np.argsort(new.eval_id, kind="stable")
        for name in Columns.EVALUATION:
            setattr(new, name, getattr(new, name)[order])
    calls = store.views.calls_after(base.call_mark)
    columns = list(zip(*calls)) if calls else [[]] * 10
    call = {"call_id": _i64(columns[0]), "call_at": _f64(columns[1]),
            "call_cost": _f64(columns[2]), "call_prompt": _i64(columns[3]),
            "call_completion": _i64(columns[4]), "call_cached": _i64(columns[5]),
            "call_latency": _f64(columns[6]),
            "call_model": _i64([new.index("model", m) for m in columns[7]]),
            "call_purpose": _i64([new.index("purpose", p) for p in columns[8]]),
            "call_flags": np.asarray([bool(e) | (RETRIED_MARK in e) << 1 for e in columns[9]],
                                     dtype=np.uint8)}
    _append(new, base, call, bool(calls))
    new.failed_calls += [(c[7], c[1], c[9]) for c in calls if c[9]]
    if rows:
        new.candidate_mark = int(rows[-1][0])
    if evaluations:
        new.evaluation_mark = max(base.evaluation_mark, int(evaluations[-1][0]))
    if calls:
        new.call_mark = int(calls[-1][0])
    return new


def settled(columns: Columns) -> Columns:
    """``columns`` cut back to the rows that no longer change: the candidates before the first
    pending one and their evaluation rows (the watermark a checkpoint keeps)."""
    pending = np.flatnonzero(columns.status == STATUSES.index(CandidateStatus.PENDING.value))
    if not len(pending):
        return columns
    keep = int(pending[0])
    mark = int(columns.id[keep - 1]) if keep else 0
    cut = Columns(mark, columns.evaluation_mark, columns.call_mark, columns.names,
                  columns.failed_calls)
    for name in Columns.CANDIDATE:
        setattr(cut, name, getattr(columns, name)[:keep])
    rows = columns.eval_candidate <= mark
    for name in Columns.EVALUATION:
        setattr(cut, name, getattr(columns, name)[rows])
    for name in Columns.CALL:
        setattr(cut, name, getattr(columns, name))
    return cut


def _folder(store: Store) -> Path:
    return Path(store.path).parent / FOLDER


def path_of(store: Store) -> Path:
    """The header of the run's columns (replaced, last, by each write)."""
    return _folder(store) / HEADER


SAMPLES = 16  # rows of each kind checked against the store, evenly spread, the last included


def _spread(count: int) -> list[int]:
    return sorted({round(i * (count - 1) / SAMPLES) for i in range(SAMPLES + 1)}) if count else []


def _samples(columns: Columns) -> tuple[list[int], list[int], list[int], list[list[Any]]]:
    """The sampled ids of each kind and the rows the columns say the store holds for them."""
    cand, ev, call = (_spread(len(columns.id)), _spread(len(columns.eval_id)),
                      _spread(len(columns.call_id)))
    models = columns.names["model"]
    expected = [
        [[int(columns.id[i]), STATUSES[int(columns.status[i])],
          None if math.isnan(columns.score[i]) else float(columns.score[i]),
          None if columns.parent[i] < 0 else int(columns.parent[i])] for i in cand],
        [[int(columns.eval_id[i]), int(columns.eval_candidate[i])] for i in ev],
        [[int(columns.call_id[i]), float(columns.call_at[i]), models[int(columns.call_model[i])]]
         for i in call]]
    return ([int(columns.id[i]) for i in cand], [int(columns.eval_id[i]) for i in ev],
            [int(columns.call_id[i]) for i in call], expected)


def _check(store: Store, columns: Columns) -> None:
    """Raises ``Unusable`` unless the store holds what ``columns`` say (no pending candidate
    up to the watermark, the sampled rows equal)."""
    if store.column_rows.pending_through(columns.candidate_mark):
        raise Unusable("a candidate up to the watermark is pending")
    *ids, expected = _samples(columns)
    if [list(map(list, rows)) for rows in store.column_rows.samples(*ids)] != expected:
        raise Unusable("the store's rows up to the watermark are not the columns'")


def write(store: Store, columns: Columns | None = None) -> Columns:
    """Write the columns of ``store`` (``columns``: those last written or read, extended by
    the rows after them; else read whole) into the run folder; returns what was written."""
    kept = settled(extend(store, columns if columns is not None else Columns()))
    _check(store, kept)
    info = store.runs.info()
    token = uuid.uuid4().hex
    folder = _folder(store)
    (folder / token).mkdir(parents=True)
    for name, values in kept.arrays().items():
        np.save(folder / token / f"{name}.npy", values)
    (folder / token / TABLES_FILE).write_text(json.dumps(
        {"names": kept.names, "failed_calls": kept.failed_calls}))
    header = {"format": FORMAT, "run_created_at": info.created_at, "token": token,
              "candidate_mark": kept.candidate_mark, "evaluation_mark": kept.evaluation_mark,
              "call_mark": kept.call_mark, "rows": len(kept.id)}
    temporary = folder / (HEADER + ".tmp")
    temporary.write_text(json.dumps(header))
    os.replace(temporary, folder / HEADER)
    for old in folder.iterdir():  # the columns written before (a reader may still map them)
        if old.is_dir() and old.name != token:
            shutil.rmtree(old, ignore_errors=True)
    return kept


def read(store: Store) -> Columns:
    """The columns written beside ``store``, checked against it (their arrays memory-mapped
    read-only); raises ``Unusable`` (or OSError) when they are missing, stale or not this
    run's."""
    header = json.loads(path_of(store).read_text())
    if header.get("format") != FORMAT:
        raise Unusable(f"format {header.get('format')}, not {FORMAT}")
    if header.get("run_created_at") != store.runs.info().created_at:
        raise Unusable("another run's columns")
    folder = _folder(store) / str(header["token"])
    tables = json.loads((folder / TABLES_FILE).read_text())
    columns = Columns(int(header["candidate_mark"]), int(header["evaluation_mark"]),
                      int(header["call_mark"]),
                      {t: list(tables["names"].get(t, [])) for t in TABLES},
                      [(str(m), float(t), str(e)) for m, t, e in tables["failed_calls"]])
    for name in columns.arrays():
        setattr(columns, name, np.load(folder / f"{name}.npy", mmap_mode="r").view(np.ndarray))
    if len(columns.id) != header["rows"]:
        raise Unusable("the columns are shorter than their header says")
    _check(store, columns)
    return columns


def read_checked(store: Store) -> Columns | None:
    """``read``, or None when there is no usable file (one log line says why when there is
    one)."""
    try:
        return read(store)
    except FileNotFoundError:
        return None
    except (Unusable, OSError, ValueError, KeyError, TypeError) as exc:
        log.info("ui columns not used (%s); reading the store", exc)
        return None


def load(store: Store) -> Columns | None:
    """The store's columns as it is now (the file's, extended by the rows after them), or None
    when there is no usable file."""
    base = read_checked(store)
    return extend(store, base) if base is not None else None


class UIColumnsHook(LoopHook):
    """Writes the UI's columns when the resume snapshot is written."""

    name = "ui_columns"
    blocks_proposals = False

    def __init__(self, store: Store) -> None:
        self.store = store
        self._written: Columns | None = None

    def checkpoint(self) -> None:
        try:
            base = self._written if self._written is not None else read_checked(self.store)
            self._written = write(self.store, base)
        except Exception as exc:  # noqa: BLE001 - derived data, never the run's failure
            log.warning("ui columns not written (the UI will read the store): %s", exc)
            self._written = None
