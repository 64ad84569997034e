"""The interfaces a search algorithm implements (seed 003's "solution selector" and loop policy).

A :class:`Selector` owns the archive: it is told about every evaluated program, in commit order,
and samples the parent (plus inspirations) of the next proposal. A selector's archive is derived
from the history: on resume the engine replays the evaluated programs through ``add`` in the same
order, each with the same per-commit random generator (:func:`commit_rng`), so every algorithm
resumes exactly without writing its own checkpoint code. (To resume a large archive quickly the
engine also pickles the selector's attributes as a resume snapshot, ``resume_snapshot.py``, and
then replays only what came after it; a selector needs nothing for that either, and one whose
state cannot be pickled is simply replayed.) Only state that cannot be derived from the
history (e.g. which program a beam is following, an LLM-written strategy) goes through
``state()`` / ``load_state()``.

An :class:`Algorithm` bundles a selector with optional loop hooks; see ``registry.py`` for how an
algorithm makes itself available to ``cambrian run --search NAME``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cambrian.core.events import Event
from cambrian.search.program_table import ProgramTable


@dataclass
class ProgramRecord:
    """An evaluated program as selectors see it (no source, no private metrics)."""

    id: int
    parent_id: int | None
    island: int
    generation: int
    correct: bool
    fitness: float | None  # oriented: higher is better, whatever the task's direction
    metrics: dict[str, Any] = field(default_factory=dict)  # public metrics
    case_scores: dict[str, float] = field(default_factory=dict)  # per test case / objective
    code_length: int = 0
    children: int = 0


@dataclass(frozen=True)
class ParentSample:
    parent_id: int
    island: int = 0
    inspiration_ids: tuple[int, ...] = ()
    kind: str | None = None  # force a mutation kind (diff, full, cross); None: engine chooses
    guidance: str = ""  # extra instruction for this proposal (e.g. "diverge" vs "refine")
    # Multipliers of the mutation schedule's intent weights for this parent (a stagnant niche
    # favours a strategy rewrite, a new one refinement); combined with the hooks' steering.
    intent_weights: Mapping[str, float] = field(default_factory=dict)


@dataclass
class SelectorContext:
    """What every selector may rely on."""

    initial_id: int
    num_islands: int
    options: Any  # the algorithm's validated options model
    database: Any  # cambrian.config.DatabaseConfig (shared archive settings)


class Selector(ABC):
    def __init__(self, context: SelectorContext) -> None:
        self.context = context
        # Every evaluated program by id in commit order; a dict to its users (its pickled form
        # is columns: program_table.py).
        self.programs: ProgramTable = ProgramTable(ProgramRecord)

    # -- required ----------------------------------------------------------------------

    @abstractmethod
    def add(self, program: ProgramRecord, rng: np.random.Generator) -> list[Event]:
        """Take in one evaluated program (correct or not), in commit order."""

    @abstractmethod
    def sample(self, rng: np.random.Generator) -> ParentSample | None:
        """Parent and inspirations for the next proposal; None when there is no correct program."""

    # -- optional ----------------------------------------------------------------------

    def record(self, program: ProgramRecord) -> None:
        """Keep every evaluated program addressable by id (selectors call this from add)."""
        self.programs[program.id] = program

    def on_child(self, parent_id: int) -> None:
        """A proposal from ``parent_id`` produced a child program (offspring counts)."""
        parent = self.programs.get(parent_id)
        if parent is not None:
            parent.children += 1

    def best(self) -> ProgramRecord | None:
        correct = [p for p in self.programs.values() if p.correct and p.fitness is not None]
        return max(correct, key=lambda p: (p.fitness, -p.id), default=None)

    def state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        """A short summary for ``cambrian status`` (archive sizes, islands, cells...)."""
        return {"programs": len(self.programs)}

    def snapshot(self) -> dict[str, Any]:
        """Where the archive's programs sit (island membership, archive ids), as plain JSON
        values. The engine stores it at every commit, so the search state can be inspected in
        the store, and checks on resume that replaying the history rebuilt the same archive.
        Keep it cheap and bounded: it is written with every commit."""
        return {"programs": len(self.programs)}


class _CommitRng:
    """A numpy Generator made on first use: most ``add`` calls draw nothing, and making one
    costs more than the rest of a replayed commit (a resume replays every commit)."""

    __slots__ = ("_key", "_rng")

    def __init__(self, key: list[int]) -> None:
        self._key = key
        self._rng: np.random.Generator | None = None

    def __getattr__(self, name: str) -> Any:
        if self._rng is None:
            self._rng = np.random.default_rng(self._key)
        return getattr(self._rng, name)


def commit_rng(seed: int, candidate_id: int) -> np.random.Generator:
    """The random generator a selector uses while taking in ``candidate_id``: a pure function of
    (run seed, candidate), so replaying the history on resume repeats every decision. It is
    created when the selector first draws from it."""
    return _CommitRng([seed, candidate_id, 0x5E1EC7])  # type: ignore[return-value]
