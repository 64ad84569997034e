"""Loop hooks: everything the evolution loop does beyond "sample a parent, ask the LLM, evaluate,
commit", behind one interface, so the engine has no special case for any of them.

A hook overrides only what it needs:

- ``restore``: once per session, first: rebuild what the hook keeps in memory from the store
  (the novelty filter's index of embeddings);
- ``prepare``: once per session before the first proposal (problem comprehension, a first
  program written by the LLM);
- ``due`` / ``step``: periodic side work between proposals (meta-scratchpad update, prompt
  rewrite, an algorithm's LLM step); while a ``blocks_proposals`` hook's step waits for its
  first LLM call no new proposal starts, so the next prompt sees its outcome; a step that
  produced nothing usable raises :class:`StepFailed`, and the loop waits longer (2, 4, 8...
  evaluations) before trying that hook's step again;
- ``take_slot``: make the child of a proposal slot without asking the LLM for code (the tune
  operator, GEPA's merge); returns :class:`SlotTaken` (with the stored child's id, or None when
  the slot is spent without a child), or None to leave the slot to the LLM;
- ``prompt_notes`` / ``system_prompt``: what every mutation prompt carries (scratchpad
  recommendations, a co-evolved system prompt), drawn with the request's random generator;
- ``steer``: how the next proposal is steered (a search phase's intent mix, temperature and
  models, a parent to restart from after stagnation); the request builder combines what every
  hook says;
- ``screen``: a cheap check before a child's full evaluation (GEPA's minibatch);
- ``evaluations_spent``: evaluations the hook ran that count against the generation budget;
- ``state`` / ``load_state``: what cannot be rebuilt from the store, saved with every commit;
- ``checkpoint``: when the resume snapshot is written, write what makes the next ``restore``
  faster (the novelty index's files); derived data, checked by ``restore`` before use;
- ``close``: once per session at its end, also when it fails (work still running is stopped).

The engine calls hooks in the order the composition root lists them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cambrian.core.events import Event


class StepFailed(Exception):
    """Raised by ``LoopHook.step`` when the step produced nothing usable: its LLM call failed
    or was skipped, or the reply held nothing to use. The loop records ``events`` and backs off
    before that hook's next step (``search/side_work.py``)."""

    def __init__(self, reason: str, events: Sequence[Event] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.events = list(events)


@dataclass(frozen=True)
class SlotContext:
    """What a hook sees of one proposal slot."""

    generation: int
    allowance: int  # evaluations left in the budget beyond those already committed to
    children_evaluated: int  # evaluated children so far (the initial program excluded)
    programs: Mapping[int, Any]  # the selector's evaluated programs (ProgramRecord) by id
    rng: Any  # numpy.random.Generator of the run


@dataclass(frozen=True)
class SlotTaken:
    """A hook used a proposal slot; ``child_id`` is the child it stored (None: no child)."""

    child_id: int | None


@dataclass(frozen=True)
class Steering:
    """How a hook steers the next proposal (seed 004 §10.5-10.6: phase-aware intents,
    temperature and models; stagnation recovery). Hooks' steerings combine: intent weights and
    temperature scales multiply, model sets intersect, the first restart parent wins."""

    # Multipliers of the mutation schedule's weights, by intent name (absent: 1).
    intent_weights: Mapping[str, float] = field(default_factory=dict)
    # Use each intent's base temperature (seed 002 §10.5) instead of the arm's, times the scale.
    intent_temperatures: bool = False
    temperature_scale: float = 1.0
    models: frozenset[str] = frozenset()  # model labels the proposal may use (empty: any)
    restart_parent: int | None = None  # work on this program instead of the selector's pick
    inspirations: tuple[int, ...] | None = None  # ...with these programs shown beside it
    intent: str | None = None  # this mutation intent instead of the schedule's draw
    tags: Mapping[str, Any] = field(default_factory=dict)  # for the child's notes

    def combined(self, other: Steering) -> Steering:
        weights = dict(self.intent_weights)
        for name, weight in other.intent_weights.items():
            weights[name] = weights.get(name, 1.0) * weight
        models = (self.models & other.models if self.models and other.models
                  else self.models or other.models)

        def first(a: Any, b: Any) -> Any:
            return a if a is not None else b

        return Steering(weights, self.intent_temperatures or other.intent_temperatures,
                        self.temperature_scale * other.temperature_scale, models,
                        first(self.restart_parent, other.restart_parent),
                        first(self.inspirations, other.inspirations),
                        first(self.intent, other.intent), {**other.tags, **self.tags})


@dataclass(frozen=True)
class DirectChild:
    """A child program built without an LLM call; stored and evaluated like any other child."""

    parent_id: int
    source: str
    operator: str
    description: str = ""
    other_parent_ids: tuple[int, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict)  # merged into the child's notes


class LoopHook:
    """Default: does nothing. Subclasses override what they need."""

    name = "hook"
    blocks_proposals = True

    def restore(self) -> None:
        return None

    async def prepare(self) -> None:
        return None

    def due(self, evaluated: int) -> bool:
        return False

    async def step(self, evaluated: int) -> list[Event]:
        """The events to record; raises :class:`StepFailed` when nothing usable came of it."""
        return []

    async def take_slot(self, slot: SlotContext) -> SlotTaken | None:
        return None

    def prompt_notes(self, rng: Any) -> tuple[str, ...]:
        return ()

    def system_prompt(self, rng: Any) -> tuple[str, dict[str, Any]] | None:
        return None

    def steer(self, rng: Any) -> Steering | None:
        return None

    async def screen(self, source: str, parent_id: int | None, work_dir: Path) -> str | None:
        """A reason to stop ``source`` before its full evaluation, or None to go on."""
        return None

    def evaluations_spent(self) -> int:
        return 0

    def state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        return None

    def checkpoint(self) -> None:
        return None

    async def close(self) -> None:
        return None
