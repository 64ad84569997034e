"""What one finished (or partly finished) run contributes to a benchmark, read from its store."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cambrian.store.store import Store

INITIAL_ID = 1  # the initial program is always the run's first candidate


@dataclass
class RunRecord:
    variant: str
    task: str
    seed: int
    run_dir: str
    outcome: str  # ran | resumed | skipped | failed
    direction: str
    # Best score so far after 0, 1, 2, ... evaluated children (index 0: the initial program);
    # None until a correct program has been evaluated.
    curve: list[float | None] = field(default_factory=list)
    evaluations: int = 0
    proposals: int = 0  # children proposed (every status but pending)
    correct: int = 0
    llm_calls: int = 0
    wall_time_s: float = 0.0
    stop_reason: str = ""
    error: str = ""

    @property
    def final_best(self) -> float | None:
        return self.curve[-1] if self.curve else None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "final_best": self.final_best}


def _better(a: float, b: float | None, maximize: bool) -> bool:
    return b is None or (a > b if maximize else a < b)


def best_so_far_curve(store: Store, budget: int) -> list[float | None]:
    """Best score after each evaluation, in the order results were committed, cut at ``budget``
    children (a run continued beyond the benchmark's budget is compared at that budget)."""
    maximize = store.run_info()["direction"] == "maximize"
    evaluated = [row for row, _ in store.evaluated_in_commit_order()]
    initial = [row for row in evaluated if row.id == INITIAL_ID]
    children = [row for row in evaluated if row.id != INITIAL_ID][:budget]
    best: float | None = None
    curve: list[float | None] = []
    for row in initial + children:
        if row.status == "correct" and row.score is not None and _better(row.score, best, maximize):
            best = row.score
        curve.append(best)
    return curve


def active_seconds(store: Store) -> float:
    """Time spent in the run's sessions. A session that was killed has no end event; it is counted
    up to its last recorded LLM call or evaluation."""
    starts = [e["created_at"] for e in store.events("session_start")]
    ends = sorted(e["created_at"] for e in store.events("session_end"))
    total = 0.0
    for index, start in enumerate(starts):
        limit = starts[index + 1] if index + 1 < len(starts) else float("inf")
        end = next((t for t in ends if start <= t <= limit), None)
        if end is None:
            row = store.execute(
                "SELECT MAX(t) FROM (SELECT created_at AS t FROM contexts UNION ALL "
                "SELECT created_at FROM evaluations) WHERE t >= ? AND t < ?",
                (start, limit if limit != float("inf") else 1e18),
            ).fetchone()
            end = row[0] if row and row[0] is not None else start
        total += max(0.0, end - start)
    return total


def read_record(store: Store, *, variant: str, task: str, seed: int, outcome: str, budget: int,
                error: str = "") -> RunRecord:
    rows = [r for r in store.candidates() if r.id != INITIAL_ID and r.status != "pending"]
    ends = store.events("session_end")
    curve = best_so_far_curve(store, budget)
    return RunRecord(
        variant=variant, task=task, seed=seed, run_dir=str(store.path.parent), outcome=outcome,
        direction=store.run_info()["direction"],
        curve=curve,
        evaluations=max(0, len(curve) - 1),
        proposals=len(rows),
        correct=sum(r.status == "correct" for r in rows),
        llm_calls=store.llm_call_count(),
        wall_time_s=active_seconds(store),
        stop_reason=str(ends[-1]["payload"].get("reason", "")) if ends else "",
        error=error,
    )
