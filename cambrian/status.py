"""What ``cambrian status`` reports, computed from a run store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cambrian.store.store import Store


@dataclass
class RunStatus:
    task: str
    direction: str
    generations: int
    budget: int
    by_status: dict[str, int]
    initial_score: float | None
    best_score: float | None
    best_id: int | None
    llm_calls: int
    proposal_success: float | None  # share of LLM calls that yielded an evaluable child
    correct_rate: float | None  # share of evaluated children that were correct
    improvement_rate: float | None  # share of correct children better than their parent
    ledger: list[dict[str, Any]] = field(default_factory=list)
    last_session: str = ""
    # Bandit arm probabilities over time: (completed pulls, {arm: probability}) snapshots.
    bandit_shares: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    guidance: str = ""
    guidance_changes: int = 0


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def run_status(store: Store) -> RunStatus:
    info = store.run_info()
    maximize = info["direction"] == "maximize"
    rows = store.candidates()
    by_status: dict[str, int] = {}
    for row in rows:
        by_status[row.status] = by_status.get(row.status, 0) + 1
    scores = {r.id: r.score for r in rows}
    correct = [r for r in rows if r.status == "correct"]
    best = None
    for row in correct:
        if best is None or (row.score > best.score if maximize else row.score < best.score):
            best = row
    children = [r for r in rows if r.id != 1]
    evaluated = [r for r in children if r.status in ("correct", "incorrect")]
    produced = [r for r in children if r.source is not None]
    improved = 0
    for row in correct:
        parent_score = scores.get(row.parent_id) if row.parent_id else None
        if row.id != 1 and parent_score is not None and row.score is not None:
            improved += (row.score > parent_score) if maximize else (row.score < parent_score)
    initial = next((r for r in rows if r.id == 1), None)
    sessions = store.events("session_end")
    shares = [(int(e["payload"]["pulls"]), dict(e["payload"]["shares"]))
              for e in store.events("bandit")]
    from cambrian.guidance import GuidanceBoard

    board = GuidanceBoard(store)
    history = board.history()
    return RunStatus(
        task=info["task_name"],
        direction=info["direction"],
        generations=len(evaluated),
        budget=int(info["config"]["evolution"]["generations"]),
        by_status=by_status,
        initial_score=initial.score if initial else None,
        best_score=best.score if best else None,
        best_id=best.id if best else None,
        llm_calls=store.llm_call_count(),
        proposal_success=_rate(len(produced), store.llm_call_count()),
        correct_rate=_rate(sum(r.status == "correct" for r in evaluated), len(evaluated)),
        improvement_rate=_rate(improved, len([r for r in correct if r.id != 1])),
        ledger=store.ledger(),
        last_session=sessions[-1]["payload"].get("reason", "") if sessions else "",
        bandit_shares=shares,
        guidance=history[-1].text if history else "",
        guidance_changes=len(history),
    )


def share_rows(shares: list[tuple[int, dict[str, float]]], max_rows: int = 8) -> list[tuple[int, dict[str, float]]]:
    """At most ``max_rows`` snapshots, evenly spread and always including the latest."""
    if len(shares) <= max_rows:
        return shares
    step = (len(shares) - 1) / (max_rows - 1)
    return [shares[round(i * step)] for i in range(max_rows)]
