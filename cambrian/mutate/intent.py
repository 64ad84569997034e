"""What a mutation intent is (seed 002 §10.1): what a proposal sets out to do, as opposed to the
reply format it answers in. An intent is an object registered by name (`intents.py`), like a
language or a provider: it says which patch kind carries it out and which search phase it
belongs to, whether a parent gives it anything to work on, what it adds to the request (a
different program to show, tags such as the function to focus on), the instruction of the
prompt's "Your task" section, and the options of the checks its child's reply goes through.

Adding an intent is one module defining a subclass plus its registration
(`register_intent`); the request builder, the prompt and the proposer ask the intent, never
its name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from cambrian.lang.language import Language
from cambrian.mutate.focus import NOTE_KEY as FOCUS_NOTE
from cambrian.mutate.focus import choose_focus, focused_instruction
from cambrian.mutate.strategies import NOTE_KEY as STRATEGY_NOTE
from cambrian.mutate.strategies import StrategyChoice, StrategyMenu
from cambrian.store.store import Store

Phase = Literal["explore", "exploit"]


class HasSource(Protocol):
    source: str


@dataclass
class IntentServices:
    """What an intent may use while a request is built: one per run (its caches live as long
    as the run's request builder)."""

    view: Callable[[int], HasSource]  # a candidate as prompts show it
    store: Store
    language: Language | None
    strategies: StrategyMenu | None = None
    given_score: str | None = None  # the improvement step's score the task gives
    caches: dict[str, dict[Any, Any]] = field(default_factory=dict)

    def cache(self, name: str) -> dict[Any, Any]:
        """A per-run cache of the intent ``name`` (what it found for a parent, say)."""
        return self.caches.setdefault(name, {})


@dataclass(frozen=True)
class PreparedIntent:
    """What an intent made of a request: the parent to work on (it may move to a child), the
    source the prompt shows instead of the parent's (None: the parent's), tags for the child's
    notes and the prompt (focus, strategy), and notes for the prompt."""

    parent_id: int
    source: str | None = None
    tags: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class MutationIntent:
    name: str
    kind: str  # patch kind: diff | full | cross
    phase: Phase
    # Weight within its phase, relative to the phase's other intents (seed 002 §10.6).
    phase_share: float
    instruction: str
    # Seed 002 §10.5 "Temperature Scheduling": the base temperature of this kind of change
    # (None: the model's own); a phase may scale it.
    temperature: float | None = None
    focused: bool = False  # works on one function the request picks (focus.py)
    draws_method: bool = False  # builds in one concrete method from the strategy menu

    def usable(self, parent_id: int, services: IntentServices) -> bool:
        """Whether the parent gives this intent something to work on."""
        return True

    def prepare(self, parent_id: int, services: IntentServices,
                rng: np.random.Generator) -> PreparedIntent:
        tags: dict[str, Any] = {}
        if self.draws_method and services.strategies is not None:
            choice = services.strategies.choose(rng, parent_id)
            if choice is not None:
                tags[STRATEGY_NOTE] = choice.text
        if self.focused and services.language is not None:
            focus = choose_focus(rng, services.view(parent_id).source, services.language)
            if focus is not None:
                tags[FOCUS_NOTE] = focus
        return PreparedIntent(parent_id, tags=tags)

    def task_text(self, source: str, language: Language, *, given_score: str | None = None,
                  strategy: str | None = None, focus: str | None = None) -> str:
        """The prompt's "Your task" instruction for a parent whose (shown) source is ``source``."""
        text = StrategyChoice(strategy).instruction if strategy else self.instruction
        return focused_instruction(text, focus) if focus else text

    def check_options(self, tags: dict[str, Any]) -> dict[str, Any]:
        """Keyword options of the child checks (``candidate_checks.child_from_reply``)."""
        return {}

    def prepares(self, notes: dict[str, Any]) -> bool:
        """Whether a correct child with these notes only prepares a later proposal's gain (the
        improvement step's score: it changes nothing until a move is written), so the intent
        bandit waits for that proposal instead of counting this one as no gain."""
        return False
