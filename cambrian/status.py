"""What ``cambrian status`` reports, computed from a run store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cambrian.core.events import (
    BanditSnapshot,
    ContainmentChecked,
    IntentBanditSnapshot,
    MovesDerived,
    Reflection,
    SessionEnded,
    StepScoreChecked,
)
from cambrian.core.objective import Objective
from cambrian.core.status import EVALUATED, CandidateStatus
from cambrian.llm.health import ModelTransport, transport_by_model
from cambrian.meta.guidance import GuidanceBoard
from cambrian.search.niches.view import NicheLine, niche_map, promote_after
from cambrian.search.phase_view import PhaseSpan, phase_timeline, steering_events
from cambrian.search.run_state import RunState, run_state
from cambrian.store.failure_kinds import FailureKind, failures_by_kind
from cambrian.store.recorder import Recorder
from cambrian.store.reflections import reflections
from cambrian.store.rows import CandidateRow, LedgerRow
from cambrian.store.store import Store


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
    by_status: dict[CandidateStatus, int]
    initial_score: float | None
    best_score: float | None
    best_id: int | None
    llm_calls: int
    calls_by_purpose: dict[str, int]  # LLM calls by what they were for (mutation, novelty...)
    proposal_success: float | None  # share of mutation calls that yielded a program
    # Shares of evaluated children: correct, and screened out at a tiered evaluation's quick
    # stage (no full-set score, so neither correct nor incorrect; the rest were incorrect).
    correct_rate: float | None
    improvement_rate: float | None  # share of correct children better than their parent
    ledger: list[LedgerRow] = field(default_factory=list)
    models: list[ModelStatus] = field(default_factory=list)
    last_session: str = ""
    # Bandit arm probabilities over time: (completed pulls, {arm: probability}) snapshots.
    bandit_shares: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    guidance: str = ""
    guidance_changes: int = 0
    screened_rate: float | None = None  # see correct_rate
    failures: list[FailureKind] = field(default_factory=list)
    outcome: str = ""  # the last session's RunOutcome word (completed, budget_reached...)
    # Evaluations per worker that ran them (a judged one spread over several counts on each).
    workers: dict[str, int] = field(default_factory=dict)
    # What the sandbox lacked in the last session (None: never probed, an older run).
    containment_missing: list[str] | None = None
    # What the task's settings relaxed in it (a GPU evaluation's address space), and the GPUs.
    containment_relaxed: list[str] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)
    # The latest self-reflection (cambrian/meta/reflection.py), when it was stored, and how
    # many the run has.
    reflection: Reflection | None = None
    reflection_at: float | None = None
    reflections: int = 0
    # Strategy niches (cambrian/search/niches/): per family, its programs and best.
    niches: list[NicheLine] = field(default_factory=list)
    # Search phases (cambrian/search/phases.py), and the steering inside them: extensions,
    # stagnation recoveries, strategy transfers, combinations.
    phases: list[PhaseSpan] = field(default_factory=list)
    steering: list[dict[str, Any]] = field(default_factory=list)
    # The intent bandit (cambrian/mutate/intent_bandit.py): its latest snapshot per island.
    intent_bandit: list[IntentBanditSnapshot] = field(default_factory=list)
    # Model-written improvement-step scores checked against the evaluator, and the moves the
    # model derived from the problem (cambrian/search/step_score_check.py, meta/move_menu.py).
    score_checks: list[StepScoreChecked] = field(default_factory=list)
    derived_moves: MovesDerived | None = None
    # Running (paused or not), stopped, finished or failed, and why (search/run_state.py).
    state: RunState | None = None
    # Per model: transport errors by kind, retries and latency (llm/health.py).
    transport: list[ModelTransport] = field(default_factory=list)


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _beats(child: CandidateRow, scores: dict[int, float | None], objective: Objective) -> bool:
    """Whether a scored child beats its scored parent."""
    parent = scores.get(child.parent_id) if child.parent_id is not None else None
    return child.score is not None and parent is not None and objective.better(child.score,
                                                                                parent)


def model_rows(store: Store, rows: list[CandidateRow], objective: Objective) -> list[ModelStatus]:
    """Per-model calls, proposal outcomes, tokens and cost (the initial program and LLM-free
    children are nobody's)."""
    scores = {r.id: r.score for r in rows}
    mutation_calls = store.contexts.count_by_model("mutation")
    children: dict[str, list[CandidateRow]] = {}
    for row in rows:
        if row.id != 1 and row.model is not None:
            children.setdefault(row.model, []).append(row)
    result = []
    for entry in store.contexts.ledger():
        mine = children.get(entry.model, [])
        correct = [r for r in mine if r.status is CandidateStatus.CORRECT]
        result.append(ModelStatus(
            model=entry.model, calls=entry.calls, failed_calls=entry.failed_calls,
            mutation_calls=mutation_calls.get(entry.model, 0),
            programs=sum(r.source is not None for r in mine),
            evaluated=sum(r.status in EVALUATED for r in mine),
            correct=len(correct),
            improved=sum(_beats(r, scores, objective) for r in correct),
            prompt_tokens=entry.prompt_tokens, completion_tokens=entry.completion_tokens,
            cached_tokens=entry.cached_tokens, cost_usd=entry.cost_usd,
            latency_s=entry.latency_s,
        ))
    return result


def run_status(store: Store) -> RunStatus:
    info = store.runs.info()
    objective = Objective.of(info.direction)
    calls_by_purpose = store.contexts.count_by_purpose()
    rows = store.candidates.list()
    by_status: dict[CandidateStatus, int] = {}
    for row in rows:
        by_status[row.status] = by_status.get(row.status, 0) + 1
    scores = {r.id: r.score for r in rows}
    correct = [r for r in rows if r.status is CandidateStatus.CORRECT]
    best = store.candidates.best(objective)
    children = [r for r in rows if r.id != 1]
    evaluated = [r for r in children if r.status in EVALUATED]
    improved = sum(_beats(r, scores, objective) for r in correct if r.id != 1)
    models = model_rows(store, rows, objective)
    initial = next((r for r in rows if r.id == 1), None)
    sessions = store.events.of_type(SessionEnded)
    shares = [(e.pulls, dict(e.shares)) for e in store.events.of_type(BanditSnapshot)]
    history = GuidanceBoard(Recorder(store)).history(target="")
    probes = store.events.of_type(ContainmentChecked)
    reflected = reflections(store)
    return RunStatus(
        task=info.task_name,
        direction=info.direction,
        generations=len(evaluated),
        budget=int(info.config["evolution"]["generations"]),
        by_status=by_status,
        initial_score=initial.score if initial else None,
        best_score=best.score if best else None,
        best_id=best.id if best else None,
        llm_calls=sum(calls_by_purpose.values()),
        calls_by_purpose=calls_by_purpose,
        proposal_success=_rate(sum(m.programs for m in models),
                               sum(m.mutation_calls for m in models)),
        correct_rate=_rate(sum(r.status is CandidateStatus.CORRECT for r in evaluated),
                           len(evaluated)),
        screened_rate=_rate(sum(r.status is CandidateStatus.SCREENED for r in evaluated),
                            len(evaluated)),
        improvement_rate=_rate(improved, len([r for r in correct if r.id != 1])),
        ledger=store.contexts.ledger(),
        models=models,
        last_session=sessions[-1].reason if sessions else "",
        outcome=sessions[-1].outcome if sessions else "",
        failures=failures_by_kind(store),
        bandit_shares=shares,
        guidance=history[-1].text if history else "",
        guidance_changes=len(history),
        workers=_per_worker(store.evaluations.workers()),
        containment_missing=list(probes[-1].missing) if probes else None,
        containment_relaxed=list(probes[-1].relaxed) if probes else [],
        gpus=list(probes[-1].gpus) if probes else [],
        reflection=reflected[-1][1] if reflected else None,
        reflection_at=reflected[-1][0] if reflected else None,
        reflections=len(reflected),
        niches=niche_map(store, objective, promote_after(info.config)),
        phases=phase_timeline(store),
        steering=steering_events(store),
        intent_bandit=latest_per_island(store.events.of_type(IntentBanditSnapshot)),
        score_checks=store.events.of_type(StepScoreChecked),
        derived_moves=next(iter(store.events.of_type(MovesDerived)[-1:]), None),
        state=run_state(store, Path(store.path).parent),
        transport=transport_by_model(store),
    )


def latest_per_island(snapshots: list[IntentBanditSnapshot]) -> list[IntentBanditSnapshot]:
    latest: dict[int, IntentBanditSnapshot] = {}
    for snapshot in snapshots:
        latest[snapshot.island] = snapshot
    return [latest[island] for island in sorted(latest)]


def _per_worker(rows: dict[str, int]) -> dict[str, int]:
    """Evaluations per worker; a row naming several (``A,B``: cases spread over nodes) counts
    for each of them."""
    counts: dict[str, int] = {}
    for names, count in rows.items():
        for name in names.split(","):
            counts[name] = counts.get(name, 0) + count
    return counts


def share_rows(shares: list[tuple[int, dict[str, float]]], max_rows: int = 8) -> list[tuple[int, dict[str, float]]]:
    """At most ``max_rows`` snapshots, evenly spread and always including the latest."""
    if len(shares) <= max_rows:
        return shares
    step = (len(shares) - 1) / (max_rows - 1)
    return [shares[round(i * step)] for i in range(max_rows)]
