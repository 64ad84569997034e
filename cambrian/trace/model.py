"""The unified in-memory trace every analysis consumes: the six EvoTrace object types of seed 001,
Appendix A.1 (runs, candidates, evaluations, edges, contexts, replay environments).

Identifiers are strings so that traces from other frameworks (UUIDs) and Cambrian's integer ids
share one representation. Candidates keep the order of the source (Cambrian: creation order).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cambrian.core.objective import MAXIMIZE, MINIMIZE, Objective

# Candidate statuses are Cambrian's one vocabulary (cambrian/core/status.py); importers map
# foreign states onto it.
from cambrian.core.status import CandidateStatus


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class RunRecord:
    id: str
    task: str
    framework: str
    direction: str  # "maximize" | "minimize"
    language: str
    config: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    code_version: str = ""
    task_dir: str = ""
    created_at: float = 0.0
    program_filename: str | None = None


@dataclass
class CandidateRecord:
    id: str
    iteration: int
    parent_id: str | None
    status: CandidateStatus  # given as its word (an importer's "correct") it is converted
    source: str | None
    language: str
    operator: str = ""
    island: int | None = None
    description: str = ""
    model: str | None = None
    context_id: str | None = None
    score: float | None = None
    error: str = ""
    notes: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0

    def __post_init__(self) -> None:
        self.status = CandidateStatus(self.status)

    @property
    def evaluated(self) -> bool:
        return self.status.evaluated and self.source is not None

    @property
    def source_sha256(self) -> str | None:
        return sha256_text(self.source) if self.source is not None else None


@dataclass
class EvaluationRecord:
    id: str
    candidate_id: str
    stage: str
    status: str
    combined_score: float | None = None
    public: dict[str, Any] = field(default_factory=dict)
    private: dict[str, Any] = field(default_factory=dict)
    text_feedback: str = ""
    error: str = ""
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0


@dataclass
class EdgeRecord:
    parent_id: str
    child_id: str
    kind: str  # "parent" | "inspiration"
    operator: str = ""


@dataclass
class ContextRecord:
    id: str
    purpose: str
    model: str
    provider: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, str]] = field(default_factory=list)
    response_text: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    error: str = ""
    parent_context_id: str | None = None
    created_at: float = 0.0


@dataclass
class EnvironmentRecord:
    id: str
    evaluator: str
    contract: str = ""
    command: str = ""
    limits: dict[str, Any] = field(default_factory=dict)
    toolchain: dict[str, Any] = field(default_factory=dict)
    file_hashes: dict[str, str] = field(default_factory=dict)
    created_at: float = 0.0


@dataclass
class Trace:
    run: RunRecord
    candidates: list[CandidateRecord]
    evaluations: list[EvaluationRecord] = field(default_factory=list)
    edges: list[EdgeRecord] = field(default_factory=list)
    contexts: list[ContextRecord] = field(default_factory=list)
    environments: list[EnvironmentRecord] = field(default_factory=list)
    # Where the trace was read from (a run dir or a trace folder); None for traces built in memory.
    origin: Path | None = None

    def __post_init__(self) -> None:
        self._by_id = {c.id: c for c in self.candidates}
        self._position = {c.id: i for i, c in enumerate(self.candidates)}

    # ------------------------------------------------------------------ lookups

    @property
    def objective(self) -> Objective:
        return MINIMIZE if self.run.direction == "minimize" else MAXIMIZE

    def candidate(self, candidate_id: str | int) -> CandidateRecord:
        return self._by_id[str(candidate_id)]

    def has(self, candidate_id: str | int) -> bool:
        return str(candidate_id) in self._by_id

    def parent_of(self, candidate_id: str | int) -> str | None:
        """Primary parent id (the lineage follows parents only, never inspirations)."""
        candidate = self._by_id.get(str(candidate_id))
        if candidate is None or candidate.parent_id is None:
            return None
        return candidate.parent_id if candidate.parent_id in self._by_id else None

    def source_of(self, candidate_id: str | int) -> str | None:
        candidate = self._by_id.get(str(candidate_id))
        return candidate.source if candidate else None

    def ancestors(self, candidate_id: str | int) -> list[str]:
        """Parent, grandparent, ... up to the root (stops on a malformed cycle)."""
        chain: list[str] = []
        seen = {str(candidate_id)}
        current = self.parent_of(candidate_id)
        while current is not None and current not in seen:
            chain.append(current)
            seen.add(current)
            current = self.parent_of(current)
        return chain

    def in_time_order(self) -> list[CandidateRecord]:
        """Candidates sorted by iteration, ties kept in source order."""
        return sorted(self.candidates, key=lambda c: (c.iteration, self._position[c.id]))

    def evaluated(self) -> list[CandidateRecord]:
        """Evaluated programs in the order they were produced."""
        return [c for c in self.in_time_order() if c.evaluated]

    def better(self, a: float, b: float) -> bool:
        return self.objective.better(a, b)

    def best(self) -> CandidateRecord | None:
        """The final best correct program; the earliest one on ties."""
        best: CandidateRecord | None = None
        for candidate in self.evaluated():
            if candidate.status != "correct" or candidate.score is None:
                continue
            if best is None or self.better(candidate.score, best.score):  # type: ignore[arg-type]
                best = candidate
        return best

    def llm_totals(self) -> dict[str, float]:
        return {
            "calls": len(self.contexts),
            "prompt_tokens": sum(c.prompt_tokens for c in self.contexts),
            "completion_tokens": sum(c.completion_tokens for c in self.contexts),
            "cost_usd": sum(c.cost_usd for c in self.contexts),
        }

    def status_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for candidate in self.candidates:
            counts[candidate.status] = counts.get(candidate.status, 0) + 1
        return counts
