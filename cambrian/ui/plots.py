"""The overview's further plots, computed from the store's plot rows (``store.plot_rows``):
cumulative LLM cost over time (the best score against cost is drawn from the overview's
score series, ``series.py``, which has the spend at each evaluation); success and improvement rates
per intent and per model over the run; evaluator occupancy (evaluations running at each
moment); program size over generations; and, for a run whose programs report two or more
numeric metrics, their Pareto front."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from cambrian.core.objective import Objective
from cambrian.search.ui_columns import Columns
from cambrian.store.store import Store
from cambrian.ui import column_models
from cambrian.ui.cache import LedgerLog, read_ledger

MAX_POINTS = 1500  # per line; more are thinned evenly (the last point kept)
RATE_SPANS = 8  # the run's proposals in this many spans of equal count


def thin(count: int, limit: int | None = None) -> list[int]:
    """Indexes of at most ``limit`` (``MAX_POINTS`` when None) evenly spread points out of
    ``count``, the last kept."""
    limit = MAX_POINTS if limit is None else limit
    if count <= limit:
        return list(range(count))
    step = (count - 1) / (limit - 1)
    return sorted({round(i * step) for i in range(limit)})


def run_start(store: Store) -> float:
    first = store.views.first_evaluated_at()
    created = store.runs.info().created_at
    return created if first is None else min(created, first)


def cost_series(spend: LedgerLog, start: float) -> dict[str, list[Any]]:
    """The run's LLM spend after each call: seconds since the start, USD and tokens so far
    (every call counted; at most ``MAX_POINTS`` points)."""
    keep = thin(len(spend.times))
    return {"seconds": [round(spend.times[i] - start, 3) for i in keep],
            "cost_usd": [round(spend.cost[i], 6) for i in keep],
            "tokens": [spend.tokens[i] for i in keep]}


def rate_series(store: Store, objective: Objective) -> dict[str, Any]:
    """Per intent and per model, in each span of the run's proposals: the share that gave a
    correct program (success) and the share that beat its parent (improved). ``proposals``:
    how many proposals the run had made at the end of each span."""
    rows = store.plot_rows.proposal_outcomes(objective)
    if not rows:
        return {"proposals": [], "intent": {}, "model": {}}
    size = max(1, math.ceil(len(rows) / RATE_SPANS))
    spans = math.ceil(len(rows) / size)
    found: dict[str, Any] = {"proposals": [min(len(rows), (n + 1) * size)
                                           for n in range(spans)]}
    for by in ("intent", "model"):
        tally: dict[str, list[list[int]]] = defaultdict(lambda: [[0, 0, 0] for _ in range(spans)])
        for position, row in enumerate(rows):
            cell = tally[getattr(row, by)][position // size]
            cell[0] += 1
            cell[1] += row.status == "correct"
            cell[2] += row.improved
        found[by] = {name: {"count": [c[0] for c in cells],
                            "success": [round(c[1] / c[0], 4) if c[0] else None for c in cells],
                            "improved": [round(c[2] / c[0], 4) if c[0] else None for c in cells]}
                     for name, cells in sorted(tally.items())}
    return found


def occupancy_series(store: Store, start: float) -> dict[str, Any]:
    """How many evaluations were running at each moment (a step line: the count after each
    start or end), from each stage's stored start and end; thinned by keeping the most
    running in each of ``MAX_POINTS`` time bins."""
    spans = store.plot_rows.evaluation_spans()
    changes = sorted([(s.started_at, 1) for s in spans] + [(s.ended_at, -1) for s in spans],
                     key=lambda change: (change[0], change[1]))
    running, seconds, counts = 0, [], []
    for at, step in changes:
        running += step
        seconds.append(round(at - start, 3))
        counts.append(running)
    if len(seconds) > MAX_POINTS:
        low, high = seconds[0], seconds[-1]
        width = (high - low) / MAX_POINTS or 1.0
        bins: dict[int, int] = {}
        for second, count in zip(seconds, counts):
            slot = min(MAX_POINTS - 1, int((second - low) / width))
            bins[slot] = max(bins.get(slot, 0), count)
        seconds = [round(low + slot * width, 3) for slot in sorted(bins)]
        counts = [bins[slot] for slot in sorted(bins)]
    slots = (store.runs.info().config.get("evolution") or {}).get("max_parallel_evaluations")
    return {"seconds": seconds, "running": counts, "peak": max(counts, default=0),
            "slots": slots if isinstance(slots, int) else None}


def size_series(store: Store) -> dict[str, Any]:
    """Every program's lines (thinned) by generation, and the mean of each generation that a
    kept program shows (so the mean line too stays within ``MAX_POINTS``)."""
    sizes = store.plot_rows.program_sizes()
    by_generation: dict[int, list[int]] = defaultdict(list)
    for size in sizes:
        by_generation[size.generation].append(size.lines)
    keep = thin(len(sizes))
    generations = sorted({sizes[i].generation for i in keep})
    return {"id": [sizes[i].id for i in keep], "generation": [sizes[i].generation for i in keep],
            "lines": [sizes[i].lines for i in keep], "status": [sizes[i].status for i in keep],
            "mean_generation": generations,
            "mean_lines": [round(sum(by_generation[g]) / len(by_generation[g]), 2)
                           for g in generations]}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def metric_directions(store: Store) -> dict[str, str]:
    """Each metric's direction: ``search.options.metric_directions`` (GEPA's), else the
    task's."""
    options = (store.runs.info().config.get("search") or {}).get("options") or {}
    given = options.get("metric_directions") or {}
    return {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}


def pareto_series(store: Store, axes: tuple[str, str] | None = None) -> dict[str, Any]:
    """Correct programs on two of their numeric public metrics (``axes``, else the first two
    named), and which of them are on the Pareto front (none dominates them, each metric
    oriented by its direction). Only metrics that vary between programs count: ``x`` is
    None when fewer than two do."""
    direction = store.runs.info().direction
    rows = store.plot_rows.correct_metrics()
    seen: dict[str, set[float]] = {}
    for row in rows:
        for name, value in row.metrics.items():
            if (number := _number(value)) is not None:
                seen.setdefault(name, set()).add(number)
    metrics = [name for name, values in seen.items() if len(values) >= 2]  # a constant: no axis
    if len(metrics) < 2:
        return {"metrics": metrics, "x": None, "y": None}
    axes = column_models.pareto_axes(metrics, axes)
    given = metric_directions(store)
    directions = {name: given.get(name, direction) for name in axes}
    points = [(row.id, x, y) for row in rows
              if (x := _number(row.metrics.get(axes[0]))) is not None
              and (y := _number(row.metrics.get(axes[1]))) is not None]
    front = pareto_front([(i, Objective.of(directions[axes[0]]).fitness(x),
                           Objective.of(directions[axes[1]]).fitness(y)) for i, x, y in points])
    count = len(points)
    if count > MAX_POINTS:  # every point on the front, the others thinned
        others = [p for p in points if p[0] not in front]
        points = sorted([p for p in points if p[0] in front]
                        + [others[i] for i in thin(len(others))])
    return {"metrics": metrics, "x": axes[0], "y": axes[1], "directions": directions,
            "count": count,
            "id": [p[0] for p in points], "xs": [p[1] for p in points],
            "ys": [p[2] for p in points], "front": sorted(front)}


def pareto_front(points: list[tuple[int, float, float]]) -> set[int]:
    """Ids of the points no other point dominates (both coordinates higher is better)."""
    front: set[int] = set()
    best_y = -math.inf
    for ident, _, y in sorted(points, key=lambda p: (-p[1], -p[2])):
        if y > best_y:
            front.add(ident)
            best_y = y
    return front


def plot_data(store: Store, pareto_axes: tuple[str, str] | None = None,
              spend: LedgerLog | None = None, columns: Columns | None = None) -> dict[str, Any]:
    """Every further plot's data; ``spend``: the run's spend log (read now when None);
    ``columns``: the run's UI columns (``search/ui_columns.py``), which the rates, occupancy,
    sizes and Pareto plots are then computed from."""
    info = store.runs.info()
    objective = Objective.of(info.direction)
    start = run_start(store)
    if spend is None:
        spend = read_ledger(store)
    if columns is not None:
        slots = (info.config.get("evolution") or {}).get("max_parallel_evaluations")
        return {"direction": info.direction, "cost": cost_series(spend, start),
                "rates": column_models.rate_series(columns, objective, RATE_SPANS),
                "occupancy": column_models.occupancy_series(columns, start, MAX_POINTS, slots),
                "sizes": column_models.size_series(columns, thin),
                "pareto": column_models.pareto_series(columns, info.direction,
                                                      metric_directions(store), pareto_axes,
                                                      MAX_POINTS, thin)}
    return {"direction": info.direction, "cost": cost_series(spend, start),
            "rates": rate_series(store, objective),
            "occupancy": occupancy_series(store, start), "sizes": size_series(store),
            "pareto": pareto_series(store, pareto_axes)}
