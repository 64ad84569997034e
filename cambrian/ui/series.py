"""Plotted data: every evaluation and the best so far (by evaluation, wall time, cost and
tokens), bandit arm shares over time, and the lineage tree's nodes."""

from __future__ import annotations

import math
from typing import Any

from cambrian.core.events import BanditSnapshot
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.search.ui_columns import STATUSES, Columns
from cambrian.store.store import Store
from cambrian.ui import column_models
from cambrian.ui.cache import BestMemo, LedgerLog, read_ledger
from cambrian.ui.plots import run_start, thin

MAX_BANDIT_POINTS = 300
MAX_SCORE_POINTS = 2000  # a longer series is sampled (``sample``): every improvement kept
SCORE_COLUMNS = ("id", "status", "score", "best", "seconds", "cost_usd", "tokens")


def sample(scores: list[float | None], correct: list[bool], improved: list[bool],
           limit: int) -> list[int]:
    """Positions of the points a chart of at most about ``limit`` points keeps: every point when
    there are no more; else every improvement of the best so far, the first and the last, and
    in each of ``limit // 3`` spans of equal count its highest and lowest correct score and its
    first other point (failures stay visible)."""
    count = len(scores)
    if count <= limit:
        return list(range(count))
    keep = {0, count - 1} | {i for i in range(count) if improved[i]}
    spans = max(1, limit // 3)
    size = -(-count // spans)
    for start in range(0, count, size):
        high = low = other = None
        for i in range(start, min(count, start + size)):
            score = scores[i]
            if not correct[i]:
                other = i if other is None else other
            elif score is not None:
                if high is None or score > scores[high]:  # type: ignore[operator]
                    high = i
                if low is None or score < scores[low]:  # type: ignore[operator]
                    low = i
        keep.update(i for i in (high, low, other) if i is not None)
    return sorted(keep)


def score_series(store: Store, after: int | None = None, spend: LedgerLog | None = None,
                 best: BestMemo | None = None, limit: int | None = None,
                 columns: Columns | None = None) -> dict[str, Any]:
    """Columns, one entry per evaluated candidate in commit order: id, status, score, best
    correct score so far, seconds since the run was created, the run's LLM spend (USD, tokens)
    when its evaluation was committed, and ``n``, its position (1 = the first evaluation; after
    ``after``: 1 = the first one after it). ``total``: how many evaluations the columns stand
    for; over ``limit`` (``MAX_SCORE_POINTS`` when None) the columns are a sample
    (``sampled``; ``sample`` says which points).
    ``after``: only the candidates committed after candidate ``after`` (KeyError when it has no
    evaluation), to append to a series that ends with it. ``spend``: the run's ledger log
    (``cache.py``; read from the store when None); ``best``: remembers the best so far at the last point
    served, so that the next ``after`` request does not read the run's earlier points.
    ``columns``: the run's UI columns (``search/ui_columns.py``), which the whole series
    (``after`` None) is then computed from."""
    info = store.runs.info()
    objective = Objective.of(info.direction)
    if after is None and columns is not None:
        return _series_of_columns(store, columns, objective, spend, best, limit)
    points = store.views.evaluation_points(after)
    if after is None:
        current = None
    else:
        known, current = best.find(store, after) if best is not None else (False, None)
        if not known:
            current = store.views.best_score_through(objective, after)
    start = run_start(store)
    if spend is None:
        spend = read_ledger(store)
    bests: list[float | None] = []
    improved: list[bool] = []
    for point in points:
        better = (point.status is CandidateStatus.CORRECT
                  and objective.better(point.score, current))
        if better:
            current = point.score
        bests.append(current)
        improved.append(better)
    keep = sample([p.score for p in points],
                  [p.status is CandidateStatus.CORRECT for p in points], improved,
                  MAX_SCORE_POINTS if limit is None else limit)
    columns: dict[str, list[Any]] = {name: [] for name in (*SCORE_COLUMNS, "n")}
    for i in keep:
        point = points[i]
        cost, tokens = spend.at(point.evaluated_at)
        for name, value in zip((*SCORE_COLUMNS, "n"), (
                point.candidate_id, str(point.status), point.score, bests[i],
                round(point.evaluated_at - start, 3), round(cost, 6), tokens, i + 1)):
            columns[name].append(value)
    if best is not None and points:
        best.remember(store, points[-1].candidate_id, bests[-1])
    return {"direction": info.direction, "after": after, "total": len(points),
            "sampled": len(keep) < len(points), **columns}


def _series_of_columns(store: Store, columns: Columns, objective: Objective,
                       spend: LedgerLog | None, best: BestMemo | None,
                       limit: int | None) -> dict[str, Any]:
    keep, points, total = column_models.score_columns(
        columns, objective, MAX_SCORE_POINTS if limit is None else limit)
    start = run_start(store)
    if spend is None:
        spend = read_ledger(store)
    found: dict[str, list[Any]] = {name: [] for name in (*SCORE_COLUMNS, "n")}
    for i in keep:
        score, so_far, at = (float(points["score"][i]), float(points["best"][i]),
                             float(points["at"][i]))
        cost, tokens = spend.at(at)
        for name, value in zip((*SCORE_COLUMNS, "n"), (
                int(points["id"][i]), STATUSES[points["status"][i]],
                None if math.isnan(score) else score, None if math.isnan(so_far) else so_far,
                round(at - start, 3), round(cost, 6), tokens, i + 1)):
            found[name].append(value)
    if best is not None and total:
        last = float(points["best"][-1])
        best.remember(store, int(points["id"][-1]), None if math.isnan(last) else last)
    return {"direction": store.runs.info().direction, "after": None, "total": total,
            "sampled": len(keep) < total, **found}


def bandit_series(store: Store, after_event: int = 0) -> dict[str, Any]:
    """Arm probabilities at each bandit snapshot (``after_event``: only the snapshots stored
    after that event id), evenly thinned to a few hundred; ``last_event`` is the id of the last
    snapshot, to ask for the next ones."""
    every = store.views.event_id_array(BanditSnapshot.kind, after_event)
    last_event = int(every[-1]) if len(every) else after_event
    ids = every[thin(len(every), MAX_BANDIT_POINTS)].tolist()  # only the kept ones decoded
    snapshots = [s.event for s in store.views.events_by_id(ids)
                 if isinstance(s.event, BanditSnapshot)]
    arms = sorted({arm for s in snapshots for arm in s.shares})
    return {"pulls": [s.pulls for s in snapshots], "last_event": last_event,
            "arms": {arm: [s.shares.get(arm) for s in snapshots] for arm in arms}}


def tree_data(store: Store, include_refused: bool) -> dict[str, Any]:
    """Nodes of the lineage tree (``include_refused``: also failed, rejected and duplicate
    proposals) and the best program's lineage."""
    info = store.runs.info()
    objective = Objective.of(info.direction)
    nodes = store.views.tree_nodes(include_unevaluated=include_refused)
    best = store.candidates.best(objective)
    lineage = [a.id for a in store.lineage.ancestry(best.id)] if best else []
    return {
        "direction": info.direction,
        "best_id": best.id if best else None,
        "best_lineage": lineage,
        "nodes": [{"id": n.id, "parent": n.parent_id, "status": str(n.status), "score": n.score,
                   "island": n.island, "operator": n.operator, "model": n.model,
                   "refused": n.reply_refused}
                  for n in nodes],
    }
