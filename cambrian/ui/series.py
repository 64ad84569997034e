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


def score_series(store: Store) -> dict[str, Any]:
    """Columns, one entry per evaluated candidate in commit order: id, status, score, best
    correct score so far, seconds since the run was created, and the run's LLM spend (USD,
    tokens) when its evaluation was committed."""
    info = store.runs.info()
    objective = Objective.of(info.direction)
    points = store.views.evaluation_points()
    spend = store.views.spend_timeline()
    spend_times = [t for t, _, _ in spend]
    cost_sums, token_sums, cost, tokens = [], [], 0.0, 0
    for _, c, k in spend:
        cost += c
        tokens += k
        cost_sums.append(cost)
        token_sums.append(tokens)
    start = min([info.created_at] + [p.evaluated_at for p in points[:1]])
    ids, statuses, scores, best, seconds, costs, token_col = [], [], [], [], [], [], []
    current: float | None = None
    for point in points:
        ids.append(point.candidate_id)
        statuses.append(str(point.status))
        scores.append(point.score)
        if point.status is CandidateStatus.CORRECT and objective.better(point.score, current):
            current = point.score
        best.append(current)
        seconds.append(round(point.evaluated_at - start, 3))
        calls = bisect.bisect_right(spend_times, point.evaluated_at)
        costs.append(round(cost_sums[calls - 1], 6) if calls else 0.0)
        token_col.append(token_sums[calls - 1] if calls else 0)
    return {"direction": info.direction, "id": ids, "status": statuses, "score": scores,
            "best": best, "seconds": seconds, "cost_usd": costs, "tokens": token_col}


def bandit_series(store: Store) -> dict[str, Any]:
    """Arm probabilities at each bandit snapshot (evenly thinned to a few hundred)."""
    snapshots = store.events.of_type(BanditSnapshot)
    if len(snapshots) > MAX_BANDIT_POINTS:
        step = (len(snapshots) - 1) / (MAX_BANDIT_POINTS - 1)
        snapshots = [snapshots[round(i * step)] for i in range(MAX_BANDIT_POINTS)]
    arms = sorted({arm for s in snapshots for arm in s.shares})
    return {"pulls": [s.pulls for s in snapshots],
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
                   "island": n.island, "operator": n.operator, "model": n.model}
                  for n in nodes],
    }
