"""What a running run is doing now (the overview's "doing now" panel): the proposals in flight
(parent, intent, model, since when), the evaluations running, and how each model's server has
been answering (latency, errors and retries, over the whole run and in the last minutes). Read
from the current session's ``proposal_started``/``proposal_ended``/``evaluation_started`` events
and the ledger."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from cambrian.core.events import (
    EvaluationStarted,
    ProposalEnded,
    ProposalStarted,
    SessionEnded,
    SessionStarted,
)
from cambrian.core.status import CandidateStatus
from cambrian.llm.health import ModelTransport, error_kind, transport_by_model
from cambrian.store.store import Store

RECENT_S = 300.0  # "errors in the last five minutes"


@dataclass(frozen=True)
class InFlight:
    proposal: int
    parent_id: int
    intent: str
    model: str
    since: float


@dataclass(frozen=True)
class Running:
    candidate_id: int
    parent_id: int | None
    since: float


@dataclass
class NowView:
    live: bool  # the session has not ended
    proposals: list[InFlight] = field(default_factory=list)
    evaluations: list[Running] = field(default_factory=list)
    transport: list[ModelTransport] = field(default_factory=list)
    recent_errors: dict[str, dict[str, int]] = field(default_factory=dict)  # model -> kind -> n
    at: float = 0.0


LedgerPart = tuple[list[tuple[str, float, str]], list[ModelTransport]]


def ledger_part(store: Store, failed: list[tuple[str, float, str]]) -> LedgerPart:
    """What the panel reads from the whole ledger: the failed calls (``failed``: as the UI's
    ledger log holds them, ``cache.py``) and each model's transport figures (the UI keeps them
    per store version)."""
    return failed, transport_by_model(store, failed)


def now_view(store: Store, ledger: LedgerPart, now: float | None = None) -> NowView:
    """The current session's work in flight (none once it has ended). ``ledger``: what
    ``ledger_part`` read."""
    now = time.time() if now is None else now
    sessions = store.events.list(SessionStarted, SessionEnded)
    live = bool(sessions) and isinstance(sessions[-1].event, SessionStarted)
    failed, transport = ledger
    view = NowView(live=live, transport=transport, at=now)
    for model, at, error in failed:
        if at >= now - RECENT_S:
            kinds = view.recent_errors.setdefault(model, {})
            kind = error_kind(error)
            kinds[kind] = kinds.get(kind, 0) + 1
    if not live:
        return view
    started: dict[int, InFlight] = {}
    evaluating: dict[int, float] = {}
    for stored in store.events.list(ProposalStarted, ProposalEnded, EvaluationStarted,
                                    after_id=sessions[-1].id):
        event: Any = stored.event
        if isinstance(event, ProposalStarted):
            started[event.proposal] = InFlight(event.proposal, event.parent_id, event.intent,
                                               event.model, stored.created_at)
        elif isinstance(event, ProposalEnded):
            started.pop(event.proposal, None)
        elif isinstance(event, EvaluationStarted):
            evaluating[event.candidate_id] = stored.created_at
    view.proposals = sorted(started.values(), key=lambda p: p.since)
    for candidate_id, since in sorted(evaluating.items(), key=lambda item: item[1]):
        row = store.candidates.find(candidate_id)
        if row is not None and row.status is CandidateStatus.PENDING:
            view.evaluations.append(Running(candidate_id, row.parent_id, since))
    return view


def now_json(view: NowView) -> dict[str, Any]:
    return {"live": view.live, "at": view.at,
            "proposals": [vars(p) for p in view.proposals],
            "evaluations": [vars(e) for e in view.evaluations],
            "recent_errors": view.recent_errors,
            "transport": [{**vars(t), "kinds": t.kinds_text} for t in view.transport]}
