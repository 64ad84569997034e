"""The overview's read models computed from a run's UI columns (``search/ui_columns.py``: the
columns its run wrote, extended by the rows after them) with NumPy instead of from the store's
rows: the failure reasons, model outcomes, island lines and evaluation statuses of the overview
tables, the score series, and the rates, occupancy, sizes and Pareto plots. Each gives what its
store-reading twin (``data.py``, ``series.py``, ``plots.py``) gives for the same rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cambrian.core.objective import Objective
from cambrian.core.status import EVALUATED, CandidateStatus
from cambrian.search.ui_columns import STATUSES, Columns
from cambrian.store.store import Store
from cambrian.store.views import ModelOutcomes

CORRECT = STATUSES.index(CandidateStatus.CORRECT.value)
EVALUATED_CODES = np.array(sorted(STATUSES.index(s.value) for s in EVALUATED))


def _parent_scores(c: Columns) -> np.ndarray:
    """Each candidate's parent's score (NaN: no parent, or an unscored one)."""
    found = np.full(len(c.id), math.nan)
    if not len(c.id):
        return found
    row_of = np.full(int(c.id[-1]) + 2, -1, dtype=np.int64)  # id -> its row (ids ascend)
    row_of[c.id] = np.arange(len(c.id))
    parent = np.where((c.parent >= 0) & (c.parent <= c.id[-1]), c.parent, -1)
    rows = row_of[parent]  # -1 (no parent): the table's last slot, which no id holds
    known = rows >= 0
    found[known] = c.score[rows[known]]
    return found


def improved(c: Columns, objective: Objective) -> np.ndarray:
    """Correct, scored and better than its scored parent (worked out once per columns)."""
    key = ("improved", objective.maximize)
    if key not in c.derived:
        parent = _parent_scores(c)
        with np.errstate(invalid="ignore"):
            beats = c.score > parent if objective.maximize else c.score < parent
        c.derived[key] = (c.status == CORRECT) & ~np.isnan(c.score) & ~np.isnan(parent) & beats
    return c.derived[key]  # type: ignore[no-any-return]


def failure_counts(c: Columns, limit: int = 12) -> list[tuple[str, str, int]]:
    """(reason, status, count) as ``data.failure_reasons`` counts them (most first, ties in
    the order first seen)."""
    rows = c.reason >= 0
    keys = c.reason[rows] * len(STATUSES) + c.status[rows]
    if not len(keys):
        return []
    unique, first, counts = np.unique(keys, return_index=True, return_counts=True)
    order = np.lexsort((first, -counts))[:limit]
    reasons = c.names["reason"]
    return [(reasons[int(unique[n]) // len(STATUSES)], STATUSES[int(unique[n]) % len(STATUSES)],
             int(counts[n])) for n in order]


def model_outcomes(c: Columns, objective: Objective) -> list[ModelOutcomes]:
    rows = (c.id != 1) & (c.model >= 0)
    model = c.model[rows]
    size = len(c.names["model"])
    tally = [np.bincount(model, weights, size) for weights in (
        c.hashed[rows], np.isin(c.status[rows], EVALUATED_CODES), c.status[rows] == CORRECT,
        improved(c, objective)[rows])]
    present = np.bincount(model, minlength=size) > 0
    names = c.names["model"]
    return sorted((ModelOutcomes(names[m], *(int(t[m]) for t in tally))
                   for m in np.flatnonzero(present)), key=lambda line: line.model)


def island_lines(c: Columns, objective: Objective,
                 ) -> list[tuple[int | None, int, int, float | None, int | None]]:
    evaluated = np.isin(c.status, EVALUATED_CODES)
    correct = (c.status == CORRECT) & ~np.isnan(c.score)
    found = []
    for island in np.unique(c.island[evaluated]).tolist():
        mine = c.island == island
        count = int(np.count_nonzero(mine & evaluated))
        good = np.flatnonzero(mine & correct)
        right = int(np.count_nonzero(mine & (c.status == CORRECT)))
        if len(good):
            scores = c.score[good]
            pick = good[int(np.argmax(scores) if objective.maximize else np.argmin(scores))]
            best: tuple[float | None, int | None] = (float(c.score[pick]), int(c.id[pick]))
        else:
            best = (None, None)
        found.append((None if island == -1 else int(island), count, right, *best))
    return sorted(found, key=lambda line: (line[0] is None, line[0] or 0))


def count_by_status(c: Columns) -> dict[CandidateStatus, int]:
    """Candidates per status (``store.candidates.count_by_status``)."""
    counts = np.bincount(c.status, minlength=len(STATUSES))
    return {CandidateStatus(STATUSES[n]): int(counts[n]) for n in np.flatnonzero(counts)}


def evaluation_statuses(c: Columns) -> dict[str, int]:
    counts = np.bincount(c.eval_status[c.eval_main], minlength=len(c.names["eval_status"]))
    names = c.names["eval_status"]
    return {names[n]: int(counts[n]) for n in sorted(np.flatnonzero(counts).tolist(),
                                                     key=lambda n: names[n])}


# --------------------------------------------------------------------------- score series


def evaluation_points(c: Columns) -> tuple[np.ndarray, np.ndarray]:
    """(candidate rows, first evaluation times) of the evaluated candidates in the order of
    their first evaluation row (``store.views.evaluation_points``)."""
    if not len(c.eval_id):
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    order = np.lexsort((c.eval_id, c.eval_candidate))
    candidates = c.eval_candidate[order]
    starts = np.flatnonzero(np.r_[True, candidates[1:] != candidates[:-1]])
    first_id = c.eval_id[order][starts]
    first_at = np.minimum.reduceat(c.eval_at[order], starts)
    ids = candidates[starts]
    at = np.clip(np.searchsorted(c.id, ids), 0, max(len(c.id) - 1, 0))
    known = (c.id[at] == ids) if len(c.id) else np.zeros(len(ids), dtype=bool)
    known &= np.isin(c.status[at], EVALUATED_CODES)
    rows, first_id, first_at = at[known], first_id[known], first_at[known]
    by_commit = np.argsort(first_id, kind="stable")
    return rows[by_commit], first_at[by_commit]


def best_so_far(scores: np.ndarray, correct: np.ndarray, objective: Objective,
                ) -> tuple[np.ndarray, np.ndarray]:
    """(whether each point improved the best correct score, the index of the best so far
    after it, -1 before any)."""
    fitness = np.where(correct & ~np.isnan(scores), scores if objective.maximize else -scores,
                       -np.inf)
    before = np.r_[-np.inf, np.maximum.accumulate(fitness)[:-1]] if len(fitness) else fitness
    better = (fitness > before) & correct & ~np.isnan(scores)
    last = np.maximum.accumulate(np.where(better, np.arange(len(better)), -1)) \
        if len(better) else np.zeros(0, dtype=np.int64)
    return better, last


def sample(scores: np.ndarray, correct: np.ndarray, better: np.ndarray, limit: int) -> list[int]:
    """``series.sample`` over columns."""
    count = len(scores)
    if count <= limit:
        return list(range(count))
    keep = {0, count - 1} | set(np.flatnonzero(better).tolist())
    spans = max(1, limit // 3)
    size = -(-count // spans)
    chunks = -(-count // size)
    pad = chunks * size - count
    scored = correct & ~np.isnan(scores)
    high = np.r_[np.where(scored, scores, -np.inf), np.full(pad, -np.inf)].reshape(chunks, size)
    low = np.r_[np.where(scored, scores, np.inf), np.full(pad, np.inf)].reshape(chunks, size)
    other = np.r_[~correct, np.zeros(pad, dtype=bool)].reshape(chunks, size)
    base = np.arange(chunks) * size
    for values, pick, valid in ((high, high.argmax(axis=1), scored), (low, low.argmin(axis=1),
                                                                       scored),
                                (other, other.argmax(axis=1), ~correct)):
        index = base + pick
        ok = np.r_[valid, np.zeros(pad, dtype=bool)][index]
        keep.update(index[ok].tolist())
    return sorted(keep)


def score_columns(c: Columns, objective: Objective, limit: int,
                  ) -> tuple[list[int], dict[str, np.ndarray], int]:
    """The kept points of the whole score series: (positions, columns of every point: id,
    status, score, best, evaluated_at; the count)."""
    rows, at = evaluation_points(c)
    scores = c.score[rows]
    correct = c.status[rows] == CORRECT
    better, last = best_so_far(scores, correct, objective)
    keep = sample(scores, correct, better, limit)
    best = np.where(last >= 0, scores[np.maximum(last, 0)], np.nan) if len(last) else scores
    return keep, {"id": c.id[rows], "status": c.status[rows], "score": scores, "best": best,
                  "at": at}, len(rows)


# --------------------------------------------------------------------------- plots


def rate_rows(c: Columns, objective: Objective) -> tuple[list[str], np.ndarray, list[str],
                                                         np.ndarray, np.ndarray, np.ndarray]:
    """The proposals (candidates made from a parent, id order): intent labels and codes,
    model labels and codes, whether correct, whether improved."""
    rows = c.parent >= 0
    labels: dict[str, int] = {}

    def code(names: list[str], fallback: np.ndarray, values: np.ndarray) -> np.ndarray:
        ops = c.names["operator"]
        by_name = np.array([labels.setdefault(n, len(labels)) if n else -1 for n in names]
                           + [-1], dtype=np.int64)
        by_op = np.array([labels.setdefault(f"({o})", len(labels)) for o in ops] + [-1],
                         dtype=np.int64)
        named = by_name[values]
        return np.where(named >= 0, named, by_op[fallback])

    intent = code(c.names["intent"], c.operator[rows], c.intent[rows])
    intent_labels = list(labels)
    labels.clear()
    model = code(c.names["model"], c.operator[rows], c.model[rows])
    return (intent_labels, intent, list(labels), model, c.status[rows] == CORRECT,
            improved(c, objective)[rows])


def rate_series(c: Columns, objective: Objective, spans_wanted: int) -> dict[str, Any]:
    intent_labels, intent, model_labels, model, correct, better = rate_rows(c, objective)
    count = len(intent)
    if not count:
        return {"proposals": [], "intent": {}, "model": {}}
    size = max(1, math.ceil(count / spans_wanted))
    spans = math.ceil(count / size)
    span = np.arange(count) // size
    found: dict[str, Any] = {"proposals": [min(count, (n + 1) * size) for n in range(spans)]}
    for by, codes, labels in (("intent", intent, intent_labels),
                              ("model", model, model_labels)):
        key = codes * spans + span
        width = len(labels) * spans
        tallies = [np.bincount(key, weights, width).reshape(len(labels), spans)
                   for weights in (None, correct, better)]
        lines = {}
        for n, name in enumerate(labels):
            cells = [(int(tallies[0][n, s]), int(tallies[1][n, s]), int(tallies[2][n, s]))
                     for s in range(spans)]
            if not any(cell[0] for cell in cells):
                continue
            lines[name] = {"count": [cell[0] for cell in cells],
                           "success": [round(cell[1] / cell[0], 4) if cell[0] else None
                                       for cell in cells],
                           "improved": [round(cell[2] / cell[0], 4) if cell[0] else None
                                        for cell in cells]}
        found[by] = dict(sorted(lines.items()))
    return found


def occupancy_changes(c: Columns, start: float) -> tuple[np.ndarray, np.ndarray]:
    """(seconds since ``start`` of each start or end of an evaluation stage, in time order;
    how many ran after it)."""
    duration = np.where(np.isnan(c.eval_duration), 0.0, np.maximum(0.0, c.eval_duration))
    times = np.r_[c.eval_at - duration, c.eval_at]
    steps = np.r_[np.ones(len(c.eval_at), dtype=np.int64),
                  -np.ones(len(c.eval_at), dtype=np.int64)]
    order = np.lexsort((steps, times))
    return times[order] - start, np.cumsum(steps[order])


def occupancy_series(c: Columns, start: float, max_points: int, slots: Any) -> dict[str, Any]:
    raw, running = occupancy_changes(c, start)
    if len(raw) <= max_points:
        seconds = [round(float(s), 3) for s in raw]
        counts = running.tolist()
    else:
        rounded = np.round(raw, 3)
        low, high = round(float(raw[0]), 3), round(float(raw[-1]), 3)
        width = (high - low) / max_points or 1.0
        slot = np.minimum(max_points - 1, ((rounded - low) / width).astype(np.int64))
        peak = np.full(max_points, -1, dtype=np.int64)
        np.maximum.at(peak, slot, running)
        used = np.flatnonzero(peak >= 0)
        seconds = [round(low + int(s) * width, 3) for s in used]
        counts = peak[used].tolist()
    return {"seconds": seconds, "running": counts, "peak": max(counts, default=0),
            "slots": slots if isinstance(slots, int) else None}


def size_series(c: Columns, keep_of: Any) -> dict[str, Any]:
    rows = np.flatnonzero(c.sized)
    keep = rows[np.asarray(keep_of(len(rows)), dtype=np.int64)]
    generations = sorted(set(c.generation[keep].tolist()))
    mine = np.isin(c.generation[rows], generations)
    gens, lines = c.generation[rows][mine], c.lines[rows][mine]
    means = []
    for g in generations:
        chosen = lines[gens == g]
        means.append(round(int(chosen.sum()) / len(chosen), 2))
    return {"id": c.id[keep].tolist(), "generation": c.generation[keep].tolist(),
            "lines": c.lines[keep].tolist(), "status": [STATUSES[s] for s in c.status[keep]],
            "mean_generation": generations, "mean_lines": means}


def pareto_axes(metrics: list[str], axes: tuple[str, str] | None) -> tuple[str, str]:
    """The two metrics a Pareto plot draws: ``axes`` when the run has both, else its first two
    varying metrics (``metrics`` lists at least two)."""
    if axes is None:
        return metrics[0], metrics[1]
    for axis in axes:
        if axis not in metrics:
            raise ValueError(f"no metric {axis!r} to plot; the run's metrics: "
                             f"{', '.join(metrics)}")
    return axes


def pareto_series(c: Columns, direction: str, given: dict[str, str], axes: tuple[str, str] | None,
                  max_points: int, thin: Any) -> dict[str, Any]:
    rows = np.flatnonzero(c.status == CORRECT)
    values = c.metrics[rows] if c.metrics.size else np.zeros((len(rows), 0))
    names = c.names["metric"]
    metrics = [name for n, name in enumerate(names)
               if len(np.unique(values[:, n][~np.isnan(values[:, n])])) >= 2]
    if len(metrics) < 2:
        return {"metrics": metrics, "x": None, "y": None}
    axes = pareto_axes(metrics, axes)
    directions = {name: given.get(name, direction) for name in axes}
    xs, ys = values[:, names.index(axes[0])], values[:, names.index(axes[1])]
    both = ~np.isnan(xs) & ~np.isnan(ys)
    ids, xs, ys = c.id[rows][both], xs[both], ys[both]
    fx = xs if Objective.of(directions[axes[0]]).maximize else -xs
    fy = ys if Objective.of(directions[axes[1]]).maximize else -ys
    order = np.lexsort((-fy, -fx))
    sorted_y = fy[order]
    before = np.r_[-np.inf, np.maximum.accumulate(sorted_y)[:-1]] if len(order) else sorted_y
    on_front = np.zeros(len(ids), dtype=bool)
    on_front[order[sorted_y > before]] = True
    count = len(ids)
    chosen = np.arange(count)
    if count > max_points:
        others = np.flatnonzero(~on_front)
        chosen = np.sort(np.r_[np.flatnonzero(on_front),
                               others[np.asarray(thin(len(others)), dtype=np.int64)]])
    return {"metrics": metrics, "x": axes[0], "y": axes[1], "directions": directions,
            "count": count, "id": ids[chosen].tolist(), "xs": xs[chosen].tolist(),
            "ys": ys[chosen].tolist(), "front": sorted(ids[on_front].tolist())}


def store_objective(store: Store) -> Objective:
    return Objective.of(store.runs.info().direction)
