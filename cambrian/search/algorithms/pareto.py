"""Pareto-front selection over per-case scores, and lineage queries (GEPA's selector).

Scores here are *oriented*: higher is better on every key. A program is on the front when it is
best (or tied best) on at least one key and no other front member dominates it; its selection
weight is the number of keys it is best on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from cambrian.core.objective import Objective
from cambrian.search.algorithm import ProgramRecord

ScoreTable = Mapping[int, Mapping[str, float]]  # program id -> key -> oriented score


def objective_scores(
    program: ProgramRecord,
    *,
    objective: Objective,
    metric_directions: Mapping[str, str],
    use_cases: bool,
) -> dict[str, float]:
    """The keys a program competes on: its test cases when the task reports them, otherwise
    its numeric public metrics, otherwise its fitness alone."""
    if use_cases:
        return {f"case:{k}": objective.fitness(v) for k, v in program.case_scores.items()
                if math.isfinite(v)}
    metrics: dict[str, float] = {}
    for name, value in program.metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            continue
        metrics[f"metric:{name}"] = metric_objective(name, objective,
                                                     metric_directions).fitness(float(value))
    if metrics:
        return metrics
    return {"fitness": float(program.fitness)} if program.fitness is not None else {}


def metric_objective(name: str, objective: Objective,
                     metric_directions: Mapping[str, str]) -> Objective:
    """A public metric's own direction (default: the task's)."""
    return Objective.of(metric_directions.get(name, objective.direction))


def _ties(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


def best_per_key(scores: ScoreTable) -> dict[str, float]:
    best: dict[str, float] = {}
    for table in scores.values():
        for key, value in table.items():
            if key not in best or value > best[key]:
                best[key] = value
    return best


def dominates(a: Mapping[str, float], b: Mapping[str, float], keys: list[str]) -> bool:
    """``a`` is at least as good as ``b`` on every key and strictly better on one (a missing
    score counts as the worst possible)."""
    strictly = False
    for key in keys:
        va, vb = a.get(key, -math.inf), b.get(key, -math.inf)
        if va < vb and not _ties(va, vb):
            return False
        if va > vb and not _ties(va, vb):
            strictly = True
    return strictly


def pareto_front(scores: ScoreTable) -> dict[int, int]:
    """Front member id -> number of keys it is (tied) best on, dominated members removed."""
    best = best_per_key(scores)
    wins: dict[int, int] = {}
    for pid in sorted(scores):
        count = sum(1 for key, value in scores[pid].items() if _ties(value, best[key]))
        if count:
            wins[pid] = count
    keys = sorted(best)
    return {
        pid: count for pid, count in wins.items()
        if not any(dominates(scores[other], scores[pid], keys) for other in wins if other != pid)
    }


@dataclass(frozen=True)
class WeakCase:
    key: str  # "case:<id>", "metric:<name>" or "fitness"
    score: float  # oriented
    best: float  # oriented best seen on that key

    @property
    def label(self) -> str:
        return self.key.split(":", 1)[-1]


def weakest_keys(parent: int, scores: ScoreTable, limit: int) -> list[WeakCase]:
    """The parent's keys with the largest gap to the best score seen, then its lowest scores."""
    best = best_per_key(scores)
    own = scores.get(parent, {})
    ranked = sorted(own.items(), key=lambda kv: (-(best[kv[0]] - kv[1]), kv[1], kv[0]))
    return [WeakCase(key, value, best[key]) for key, value in ranked[:limit]]


def wins_against(a: Mapping[str, float], b: Mapping[str, float]) -> int:
    """Keys on which ``a`` is strictly better than ``b``."""
    return sum(1 for key, value in a.items()
               if key in b and value > b[key] and not _ties(value, b[key]))


# ---------------------------------------------------------------------------- lineage


def ancestors(program_id: int, programs: Mapping[int, ProgramRecord]) -> list[int]:
    """Ids of the program's ancestors along ``parent_id``, nearest first (cycle-safe)."""
    chain: list[int] = []
    seen = {program_id}
    current = programs.get(program_id)
    while current is not None and current.parent_id is not None and current.parent_id not in seen:
        chain.append(current.parent_id)
        seen.add(current.parent_id)
        current = programs.get(current.parent_id)
    return chain


def common_ancestor(a: int, b: int, programs: Mapping[int, ProgramRecord]) -> int | None:
    """The nearest shared ancestor of two programs of which neither descends from the other."""
    line_a, line_b = ancestors(a, programs), ancestors(b, programs)
    if a in line_b or b in line_a:
        return None
    shared = set(line_b)
    return next((pid for pid in line_a if pid in shared), None)
