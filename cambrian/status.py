"""What ``cambrian status`` reports, computed from a run store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cambrian.store.store import EVALUATED_STATUSES, CandidateRow, Store


@dataclass
class ModelStatus:
    """One model's share of the run: its LLM calls and what its proposals became."""

    model: str
    calls: int  # every call: mutations and side calls (scratchpad, judge, prompt rewrites...)
    failed_calls: int
    mutation_calls: int
    programs: int  # proposals that yielded a program (evaluated, pending, rejected or duplicate)
    evaluated: int  # children whose evaluation finished
    correct: int
    improved: int  # correct children that beat their parent
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float
    latency_s: float

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def program_rate(self) -> float | None:
        return _rate(self.programs, self.mutation_calls)

    @property
    def correct_rate(self) -> float | None:
        return _rate(self.correct, self.evaluated)

    @property
    def improvement_rate(self) -> float | None:
        return _rate(self.improved, self.correct)


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
    proposal_success: float | None  # share of mutation calls that yielded a program
    # Shares of evaluated children: correct, and screened out at a tiered evaluation's quick
    # stage (no full-set score, so neither correct nor incorrect; the rest were incorrect).
    correct_rate: float | None
    improvement_rate: float | None  # share of correct children better than their parent
    ledger: list[dict[str, Any]] = field(default_factory=list)
    models: list[ModelStatus] = field(default_factory=list)
    last_session: str = ""
    # Bandit arm probabilities over time: (completed pulls, {arm: probability}) snapshots.
    bandit_shares: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    guidance: str = ""
    guidance_changes: int = 0
    screened_rate: float | None = None  # see correct_rate


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _beats(child: float | None, parent: float | None, maximize: bool) -> bool:
    if child is None or parent is None:
        return False
    return child > parent if maximize else child < parent


def model_rows(store: Store, rows: list[CandidateRow], maximize: bool) -> list[ModelStatus]:
    """Per-model calls, proposal outcomes, tokens and cost (the initial program and LLM-free
    children are nobody's)."""
    scores = {r.id: r.score for r in rows}
    mutation_calls = {str(m): int(n) for m, n in store.execute(
        "SELECT model, COUNT(*) FROM contexts WHERE purpose='mutation' GROUP BY model")}
    children: dict[str, list[CandidateRow]] = {}
    for row in rows:
        if row.id != 1 and row.model is not None:
            children.setdefault(row.model, []).append(row)
    result = []
    for entry in store.ledger():
        mine = children.get(entry["model"], [])
        correct = [r for r in mine if r.status == "correct"]
        result.append(ModelStatus(
            model=entry["model"], calls=int(entry["calls"]),
            failed_calls=int(entry["failed_calls"] or 0),
            mutation_calls=mutation_calls.get(entry["model"], 0),
            programs=sum(r.source is not None for r in mine),
            evaluated=sum(r.status in EVALUATED_STATUSES for r in mine),
            correct=len(correct),
            improved=sum(_beats(r.score, scores.get(r.parent_id) if r.parent_id else None,
                                maximize) for r in correct),
            prompt_tokens=int(entry["prompt_tokens"] or 0),
            completion_tokens=int(entry["completion_tokens"] or 0),
            cached_tokens=int(entry["cached_tokens"] or 0),
            cost_usd=float(entry["cost_usd"] or 0.0), latency_s=float(entry["latency_s"] or 0.0),
        ))
    return result


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
    evaluated = [r for r in children if r.status in EVALUATED_STATUSES]
    improved = sum(_beats(r.score, scores.get(r.parent_id) if r.parent_id else None, maximize)
                   for r in correct if r.id != 1)
    models = model_rows(store, rows, maximize)
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
        proposal_success=_rate(sum(m.programs for m in models),
                               sum(m.mutation_calls for m in models)),
        correct_rate=_rate(sum(r.status == "correct" for r in evaluated), len(evaluated)),
        screened_rate=_rate(sum(r.status == "screened" for r in evaluated),
                            len(evaluated)),
        improvement_rate=_rate(improved, len([r for r in correct if r.id != 1])),
        ledger=store.ledger(),
        models=models,
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
