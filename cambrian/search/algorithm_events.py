"""Events search algorithms record (typed, like every event: ``cambrian/core/events.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cambrian.core.events import Event, event_kind


@event_kind("migration")
@dataclass(frozen=True)
class Migration(Event):
    """Programs copied or moved between islands: each move has candidate_id, from_island and
    to_island (and what the algorithm adds)."""

    moves: list[dict[str, Any]] = field(default_factory=list)


@event_kind("island_spawned")
@dataclass(frozen=True)
class IslandSpawned(Event):
    island: int
    seed_id: int
    seed_rule: str = ""
    evaluated: int = 0


@event_kind("guidance")
@dataclass(frozen=True)
class AlgorithmGuidance(Event):
    """AdaEvolve's paradigm-breakthrough direction for the next proposals."""

    evaluated: int
    best_id: int
    guidance: str


@event_kind("guidance_failed")
@dataclass(frozen=True)
class AlgorithmGuidanceFailed(Event):
    evaluated: int
    reply: str = ""


@event_kind("strategy_swap")
@dataclass(frozen=True)
class StrategySwap(Event):
    """EvoX installed an LLM-written selection strategy."""

    evaluated: int
    source: str
    previous_source: str | None = None


@event_kind("strategy_rejected")
@dataclass(frozen=True)
class StrategyRejected(Event):
    evaluated: int
    accepted: bool = False
    error: str | None = None
    source: str = ""


@event_kind("strategy_rollback")
@dataclass(frozen=True)
class StrategyRollback(Event):
    error: str
    failed_source: str
    restored_source: str
    evaluated: int = 0
