"""Read models of the runs list and of a run's overview, built through the store's API."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cambrian.core.events import (
    ControlChanged,
    SessionEnded,
    SessionStarted,
    TuneStepped,
)
from cambrian.core.objective import Objective
from cambrian.core.status import ALL_STATUSES, EVALUATED
from cambrian.meta.strategy_tags import TagBook
from cambrian.search.niches.view import niche_map, promote_after
from cambrian.search.phase_view import phase_timeline, steering_events
from cambrian.search.run_state import RUNNING, STOPPED, RunState, run_state
from cambrian.search.ui_columns import Columns
from cambrian.store.browse import REASON_CHARS, failure_reason
from cambrian.store.reflections import reflections
from cambrian.store.rows import Spend
from cambrian.store.store import Store
from cambrian.ui import column_models
from cambrian.ui.cache import LedgerLog


def configured_models(config: dict[str, Any]) -> list[str]:
    models = (config.get("llm") or {}).get("models") or []
    return [str(m.get("name") or m.get("model")) for m in models if isinstance(m, dict)]


@dataclass
class RunRow:
    key: str
    name: str
    path: str
    framework: str
    task: str = ""
    algorithm: str = ""
    models: list[str] = field(default_factory=list)
    state: RunState = RunState(STOPPED, "")
    direction: str = "maximize"
    best_score: float | None = None
    best_id: int | None = None
    initial_score: float | None = None
    evaluations: int = 0
    budget: int | None = None
    cost_usd: float = 0.0
    tokens: int = 0
    llm_calls: int = 0
    created_at: float = 0.0
    error: str = ""

    @property
    def status(self) -> str:
        return self.state.status


def run_row(store: Store, key: str, run_dir: Path, framework: str, ledger: LedgerLog) -> RunRow:
    """The run's line in the runs list and the overview's summary. ``ledger``: the run's ledger
    log (``cache.py``), whose totals stand for the store's."""
    info = store.runs.info()
    objective = Objective.of(info.direction)
    best = store.candidates.best(objective)
    initial = store.candidates.find(1)
    spend = Spend(*ledger.total())
    budget = (info.config.get("evolution") or {}).get("generations")
    return RunRow(
        key=key, name=run_dir.name, path=str(run_dir), framework=framework,
        task=info.task_name,
        algorithm=str((info.config.get("search") or {}).get("algorithm") or framework),
        models=configured_models(info.config) or [e.model for e in ledger.ledger()],
        state=run_state(store, run_dir, framework), direction=info.direction,
        best_score=best.score if best else None, best_id=best.id if best else None,
        initial_score=initial.score if initial else None,
        evaluations=store.candidates.count(*EVALUATED) - int(
            initial is not None and initial.status in EVALUATED),  # children (and tune trials)
        budget=int(budget) if isinstance(budget, int) else None,
        cost_usd=spend.cost_usd, tokens=spend.tokens, llm_calls=spend.calls,
        created_at=info.created_at)


# --------------------------------------------------------------------------- overview panels


@dataclass(frozen=True)
class FailureReason:
    reason: str
    status: str
    count: int


@dataclass(frozen=True)
class ModelLine:
    model: str
    calls: int
    failed_calls: int
    mutation_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    programs: int
    evaluated: int
    correct: int
    improved: int


@dataclass(frozen=True)
class IslandLine:
    island: int | None
    programs: int
    correct: int
    best_score: float | None
    best_id: int | None


@dataclass
class OverviewPanels:
    row: RunRow
    by_status: list[tuple[str, int]]
    evaluation_statuses: dict[str, int]
    failures: list[FailureReason]
    models: list[ModelLine]
    islands: list[IslandLine]
    migrations: int
    novelty_rejections: int
    novelty_latest: list[dict[str, Any]]
    tune_steps: list[dict[str, Any]]
    notes: list[dict[str, Any]]
    guidance: list[dict[str, Any]]
    controls: list[dict[str, Any]]
    sessions: list[dict[str, Any]]
    active_guidance: str
    paused: bool
    # Strategy niches, best first: family, count, best_score, best_id, key_idea (of the
    # best) and elites (ids, best first); empty when the run tagged nothing.
    niches: list[dict[str, Any]] = field(default_factory=list)
    # Self-reflections, newest last: when, after how many evaluations, the statistics as the
    # LLM read them, its recommendations and the intent weights they give.
    reflections: list[dict[str, Any]] = field(default_factory=list)
    # Each niche's share of the tagged programs over the run: {"spans": ["#a-#b", ...],
    # "shares": {family: [fraction per span]}} (empty: nothing tagged).
    niche_shares: dict[str, Any] = field(default_factory=dict)
    # Search phases (PhaseSpan dicts, oldest first) and the steering inside them.
    phases: list[dict[str, Any]] = field(default_factory=list)
    steering: list[dict[str, Any]] = field(default_factory=list)


def proposals_paused(store: Store, row: RunRow) -> bool:
    """Whether a running run's proposals are paused now."""
    return row.status == RUNNING and row.state.paused


def failure_reasons(store: Store, limit: int = 12) -> list[FailureReason]:
    """Failed and refused candidates grouped by the first line of their error, numbers
    blanked ("too similar to program N (cosine N)")."""
    counts: Counter[tuple[str, str]] = Counter()
    for status, error in store.views.failure_texts(REASON_CHARS):
        counts[(failure_reason(status, error), str(status))] += 1
    return [FailureReason(reason, status, n) for (reason, status), n in counts.most_common(limit)]


def model_lines(store: Store, objective: Objective, ledger: LedgerLog,
                columns: Columns | None = None) -> list[ModelLine]:
    """Per model, its calls and spend (from ``ledger``, the run's ledger log) and what its
    children became (``columns``: from the run's UI columns instead of the store's rows)."""
    outcomes = {m.model: m for m in (
        store.views.model_outcomes(objective) if columns is None
        else column_models.model_outcomes(columns, objective))}
    lines = []
    for entry in ledger.ledger():
        mine = outcomes.get(entry.model)
        lines.append(ModelLine(
            entry.model, entry.calls, entry.failed_calls, ledger.mutation.get(entry.model, 0),
            entry.prompt_tokens, entry.completion_tokens, entry.cost_usd,
            mine.programs if mine else 0, mine.evaluated if mine else 0,
            mine.correct if mine else 0, mine.improved if mine else 0))
    return lines


def island_lines(store: Store, objective: Objective) -> list[IslandLine]:
    return [IslandLine(*line) for line in store.views.island_lines(objective)]


def control_detail(detail: dict[str, Any]) -> str:
    """A control request's payload as read: "generations 500 → 400", "refused: why"."""
    before = detail.get("before") or {}
    parts = [f"{key} {before[key]} → {value}" if key in before else f"{key} {value}"
             for key, value in detail.items() if key not in ("before", "refused")]
    if detail.get("refused"):
        parts.append(f"refused: {detail['refused']}")
    return ", ".join(parts)


def _events(store: Store, kind: type, limit: int) -> list[tuple[float, Any]]:
    return [(stored.created_at, stored.event) for stored in store.events.list(kind)][-limit:]


def reflection_items(store: Store, limit: int = 10) -> list[dict[str, Any]]:
    """The latest ``limit`` self-reflections as JSON-ready dicts."""
    return [{"at": at, "evaluated": r.evaluated, "model": r.model, "summary": r.summary,
             "recommendations": [asdict(item) for item in r.items()],
             "intent_weights": r.intent_weights(), "context_id": r.context_id}
            for at, r in reflections(store)[-limit:]]


def niche_items(store: Store, objective: Objective) -> list[dict[str, Any]]:
    """The run's strategy niches (``cambrian/search/niches/view.py``) as JSON-ready dicts."""
    config = store.runs.info().config
    return [{"family": n.family, "count": n.count, "best_score": n.best_score,
             "best_id": n.best_id, "key_idea": n.key_idea, "elites": list(n.elites)}
            for n in niche_map(store, objective, promote_after(config))]


NICHE_SHARE_SPANS = 5


def niche_shares(store: Store) -> dict[str, Any]:
    """Each strategy family's share of the tagged programs, in up to five spans of the run (by
    candidate id): how the niches grew and faded."""
    config = store.runs.info().config
    families = TagBook.from_store(store, promote_after(config)).families()
    ids = sorted(families)
    if not ids:
        return {}
    size = max(1, -(-len(ids) // NICHE_SHARE_SPANS))
    chunks = [ids[start:start + size] for start in range(0, len(ids), size)]
    names = sorted(set(families.values()))
    shares = {name: [round(sum(families[i] == name for i in chunk) / len(chunk), 3)
                     for chunk in chunks] for name in names}
    return {"spans": [f"#{chunk[0]}-#{chunk[-1]}" for chunk in chunks], "shares": shares}


def overview_panels(store: Store, row: RunRow, ledger: LedgerLog,
                    columns: Columns | None = None) -> OverviewPanels:
    """Everything the overview's tables show. ``ledger``: the run's ledger log (``cache.py``);
    ``columns``: the run's UI columns (``search/ui_columns.py``), which the failure reasons,
    model outcomes, island lines and evaluation statuses are then counted from."""
    objective = Objective.of(row.direction)
    counts = store.candidates.count_by_status() if columns is None \
        else column_models.count_by_status(columns)
    refused = store.views.refused(novelty_only=True, limit=10)
    tune = [{"at": at, **event.payload()} for at, event in _events(store, TuneStepped, 50)]
    controls = [{"at": at, "action": e.action, "source": e.source, "detail": e.detail,
                 "text": control_detail(e.detail)}
                for at, e in _events(store, ControlChanged, 50)]
    sessions = [{"at": at, "kind": e.kind, "reason": getattr(e, "reason", ""),
                 "outcome": getattr(e, "outcome", "")}
                for at, e in _events(store, SessionStarted, 20) + _events(store, SessionEnded, 20)]
    guidance = [{"id": g.id, "at": g.created_at, "action": g.action, "source": g.source,
                 "change": g.change_text, "active": g.text, "target": g.target or "every prompt"}
                for g in store.guidance.history()]
    latest = store.guidance.latest("")
    return OverviewPanels(
        row=row,
        by_status=[(str(s), counts.get(s, 0)) for s in ALL_STATUSES if counts.get(s)],
        evaluation_statuses=store.views.evaluation_statuses() if columns is None
        else column_models.evaluation_statuses(columns),
        failures=failure_reasons(store) if columns is None
        else [FailureReason(*line) for line in column_models.failure_counts(columns)],
        models=model_lines(store, objective, ledger, columns),
        islands=island_lines(store, objective) if columns is None
        else [IslandLine(*line) for line in column_models.island_lines(columns, objective)],
        migrations=len(store.views.event_ids("migration")),
        novelty_rejections=store.views.count_refused(novelty_only=True),
        novelty_latest=[{"id": r.id, "parent_id": r.parent_id, "reason": r.error,
                         "similarity": r.notes.get("similarity")} for r in refused],
        tune_steps=tune,
        notes=[{"evaluated": n.evaluated, "scratchpad": n.scratchpad,
                "recommendations": n.recommendations, "at": n.created_at}
               for n in store.meta_notes.list()][-5:],
        guidance=guidance[-50:],
        controls=controls,
        sessions=sorted(sessions, key=lambda s: s["at"]),
        active_guidance=latest.text if latest else "",
        paused=proposals_paused(store, row),
        niches=niche_items(store, objective),
        reflections=reflection_items(store),
        niche_shares=niche_shares(store),
        phases=[span.as_dict() for span in phase_timeline(store)],
        steering=steering_events(store),
    )

