"""Plotted data: every evaluation and the best so far (by evaluation, wall time, cost and
tokens), bandit arm shares over time, and the lineage tree's nodes."""

from __future__ import annotations

import bisect
from typing import Any

from cambrian.core.events import BanditSnapshot
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.store.store import Store

MAX_BANDIT_POINTS = 300
SCORE_COLUMNS = ("id", "status", "score", "best", "seconds", "cost_usd", "tokens")


def score_series(store: Store, after: int | None = None) -> dict[str, Any]:
    """Columns, one entry per evaluated candidate in commit order: id, status, score, best
    correct score so far, seconds since the run was created, and the run's LLM spend (USD,
    tokens) when its evaluation was committed. ``after``: only the candidates committed after
    candidate ``after`` (KeyError when it has no evaluation), to append to a series that ends
    with it."""
    info = store.runs.info()
    objective = Objective.of(info.direction)
    points = store.views.evaluation_points(after)
    current = None if after is None else store.views.best_score_through(objective, after)
    first = store.views.first_evaluated_at()
    start = info.created_at if first is None else min(info.created_at, first)
    columns: dict[str, list[Any]] = {name: [] for name in SCORE_COLUMNS}
    spend = _spend_at([point.evaluated_at for point in points], store)
    for point, (cost, tokens) in zip(points, spend):
        if point.status is CandidateStatus.CORRECT and objective.better(point.score, current):
            current = point.score
        for name, value in zip(SCORE_COLUMNS, (
                point.candidate_id, str(point.status), point.score, current,
                round(point.evaluated_at - start, 3), round(cost, 6), tokens)):
            columns[name].append(value)
    return {"direction": info.direction, "after": after, **columns}


def _spend_at(times: list[float], store: Store) -> list[tuple[float, int]]:
    """The run's LLM spend (USD, tokens) at each of ``times``: the calls made up to then."""
    if not times:
        return []
    base, calls = store.views.spend_split(min(times))
    cost, tokens = base
    call_times, sums = [t for t, _, _ in calls], []
    for _, call_cost, call_tokens in calls:
        cost, tokens = cost + call_cost, tokens + call_tokens
        sums.append((cost, tokens))
    return [sums[n - 1] if (n := bisect.bisect_right(call_times, t)) else base for t in times]


def bandit_series(store: Store, after_event: int = 0) -> dict[str, Any]:
    """Arm probabilities at each bandit snapshot (``after_event``: only the snapshots stored
    after that event id), evenly thinned to a few hundred; ``last_event`` is the id of the last
    snapshot, to ask for the next ones."""
    stored = store.events.list(BanditSnapshot, after_id=after_event)
    last_event = stored[-1].id if stored else after_event
    snapshots = [s.event for s in stored if isinstance(s.event, BanditSnapshot)]
    if len(snapshots) > MAX_BANDIT_POINTS:
        step = (len(snapshots) - 1) / (MAX_BANDIT_POINTS - 1)
        snapshots = [snapshots[round(i * step)] for i in range(MAX_BANDIT_POINTS)]
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
