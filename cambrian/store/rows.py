"""Typed rows the store hands out (plain frozen dataclasses; no SQL types leak out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from cambrian.core.status import CandidateStatus


@dataclass(frozen=True)
class RunInfo:
    id: str
    created_at: float
    task_name: str
    task_dir: str
    direction: str
    language: str
    config: dict[str, Any]
    seed: int
    code_version: str
    framework: str = "cambrian"


@dataclass(frozen=True)
class CandidateRow:
    id: int
    generation: int
    island: int | None
    parent_id: int | None
    operator: str
    status: CandidateStatus
    source: str | None
    source_hash: str | None
    description: str
    model: str | None
    score: float | None
    error: str
    notes: dict[str, Any]
    context_id: int | None = None
    created_at: float = 0.0
    language: str = ""


class IntentOutcome(NamedTuple):
    """An evaluated child made with a mutation intent, as the mutation schedule replays it."""

    id: int
    parent_id: int | None
    status: CandidateStatus
    score: float | None
    intent: str
    evaluated_at: float  # its first evaluation's commit time
    island: int | None
    notes: dict[str, Any]
    parent_score: float | None  # None unless the parent is correct


class ReplayRow(NamedTuple):
    """What a resumed run replays of one evaluated candidate: the columns the selector needs
    and its last evaluation's public metrics and per-case results, nothing else (a tuple: a
    resume makes one per evaluated program)."""

    id: int
    parent_id: int | None
    island: int | None
    generation: int
    status: CandidateStatus
    score: float | None
    code_length: int
    public: dict[str, Any]
    cases: list[Any] | None


@dataclass(frozen=True)
class NewCandidate:
    """What a new candidate row holds; the store adds its id, source hash and time."""

    generation: int
    island: int | None
    parent_id: int | None
    operator: str
    status: CandidateStatus
    language: str
    source: str | None = None
    description: str = ""
    model: str | None = None
    context_id: int | None = None
    error: str = ""
    notes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", CandidateStatus(self.status))


@dataclass(frozen=True)
class NewContext:
    """One LLM call as the gateway records it (messages and reply byte-identical)."""

    purpose: str
    model: str
    provider: str
    params: dict[str, Any]
    messages: list[dict[str, str]]
    response_text: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    error: str = ""
    parent_context_id: int | None = None
    response_dropped_chars: int = 0


@dataclass(frozen=True)
class ContextRow:
    id: int
    purpose: str
    model: str
    provider: str
    params: dict[str, Any]
    messages: list[dict[str, str]]
    response_text: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float
    latency_s: float
    error: str
    parent_context_id: int | None
    created_at: float
    response_dropped_chars: int = 0


@dataclass(frozen=True)
class LedgerRow:
    """Calls, tokens and cost of one model (the token and cost ledger)."""

    model: str
    calls: int
    failed_calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost_usd: float
    latency_s: float


@dataclass(frozen=True)
class Spend:
    cost_usd: float
    tokens: int
    calls: int


@dataclass(frozen=True)
class MetaNoteRow:
    evaluated: int
    scratchpad: str
    recommendations: list[str]
    context_id: int | None = None
    created_at: float = 0.0


@dataclass(frozen=True)
class GuidanceRow:
    id: int  # 0: no guidance has ever been given
    text: str  # the guidance active after this change
    created_at: float = 0.0
    action: str = ""
    source: str = ""
    change_text: str = ""  # what the change itself said (appended or replacing text)
    restores_id: int | None = None
    target: str = ""  # "" for every prompt, else "candidate:ID" or "lineage:ID"


@dataclass(frozen=True)
class SystemPromptRow:
    id: int
    parent_id: int | None
    text: str
    evaluated: int
    context_id: int | None
    retired: bool


@dataclass(frozen=True)
class PromptPull:
    """One candidate produced under a co-evolved system prompt, for its statistics."""

    prompt_id: int
    status: CandidateStatus
    score: float | None
    parent_score: float | None


@dataclass(frozen=True)
class Ancestor:
    id: int
    parent_id: int | None
    score: float | None
    correct: bool


@dataclass(frozen=True)
class ControlRequest:
    id: int
    action: str
    payload: dict[str, Any]
    source: str
    created_at: float
    applied_at: float | None = None
