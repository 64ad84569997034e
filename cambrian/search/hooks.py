"""Loop hooks: the parts of a search algorithm that go beyond choosing a parent.

A selector only decides *which* program to mutate next. Some algorithms also need to act on the
loop itself (seed 003's "loop policy"):

- ``step``: LLM-driven work between proposals, e.g. AdaEvolve's paradigm-breakthrough guidance or
  EvoX rewriting its own selection strategy. The engine runs it as a side task and holds new
  proposals back until it finishes, so the next prompt sees its effect.
- ``direct_child``: a child made without an LLM (GEPA's merge of two descendants of a common
  ancestor). It is stored and evaluated like any other child.
- ``screen``: a cheap check before the full evaluation (GEPA's minibatch acceptance). A child
  that fails it is stored as ``rejected`` with the reason and never fully evaluated.

Hooks keep whatever they cannot derive from the history in ``state()``; the engine persists it
after every commit and hands it back through ``load_state`` on resume.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cambrian.evaluate.result import case_scores
from cambrian.llm.base import GenerationParams, LLMError, LLMProvider, LLMRequest, Message
from cambrian.search.algorithm import Selector, SelectorEvent
from cambrian.store.store import Store

CaseEvaluator = Callable[[str, Sequence[str], Path], Awaitable[dict[str, float]]]


BudgetCheck = Callable[[], str | None]


class Assistant:
    """One LLM used for the run's own requests (an algorithm's hooks, prompt rewrites, the
    problem brief...); every call is stored as a context. ``budget_check`` is asked before each
    call: once a budget cap is reached no new call starts."""

    def __init__(self, store: Store, provider: LLMProvider, model_label: str, is_local: bool,
                 budget_check: BudgetCheck | None = None) -> None:
        self.store = store
        self.provider = provider
        self.model_label = model_label
        self.is_local = is_local
        self.budget_check = budget_check

    async def ask(
        self,
        purpose: str,
        prompt: str,
        *,
        max_tokens: int = 600,
        temperature: float = 0.5,
        grammar: str | None = None,
        system: str | None = None,
    ) -> str | None:
        """The reply text, or None when the call failed (the failure is stored) or a budget cap
        forbids it (an ``llm_call_skipped`` event says why)."""
        if skipped_for_budget(self.store, self.budget_check, purpose):
            return None
        messages = ((Message("system", system),) if system else ()) + (Message("user", prompt),)
        request = LLMRequest(messages, GenerationParams(
            temperature=temperature, max_tokens=max_tokens,
            grammar=grammar if self.is_local else None))
        try:
            response = await self.provider.complete(request)
        except LLMError as exc:
            self.store.add_context(purpose=purpose, model=self.model_label, provider="",
                                   request=request, response=None, error=str(exc))
            return None
        self.store.add_context(purpose=purpose, model=self.model_label, provider="",
                               request=request, response=response)
        return response.text


def skipped_for_budget(store: Store, budget_check: BudgetCheck | None, purpose: str) -> bool:
    """True (and recorded as an event) when a budget cap forbids a new LLM call."""
    reason = budget_check() if budget_check is not None else None
    if reason is None:
        return False
    store.add_event("llm_call_skipped", {"purpose": purpose, "reason": reason})
    return True


@dataclass
class HookServices:
    """What the engine lends to an algorithm's hooks."""

    store: Store
    maximize: bool
    problem: str  # the task's public problem statement
    assistant: Assistant
    evaluate_cases: CaseEvaluator | None = None  # evaluate a source on a subset of test cases
    case_ids: tuple[str, ...] = ()  # the public cases evaluate_cases accepts


@dataclass(frozen=True)
class DirectChild:
    """A child program built without an LLM call."""

    parent_id: int
    source: str
    operator: str
    description: str = ""
    other_parent_ids: tuple[int, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict)  # merged into the child's notes


class LoopHooks:
    """Default: no loop behaviour beyond the selector. Subclasses override what they need."""

    def __init__(self, selector: Selector, services: HookServices, options: Any) -> None:
        self.selector = selector
        self.services = services
        self.options = options

    def due(self, evaluated: int) -> bool:
        return False

    async def step(self, evaluated: int) -> list[SelectorEvent]:
        return []

    def direct_child(self, rng: np.random.Generator) -> DirectChild | None:
        return None

    async def screen(self, source: str, parent_id: int | None, work_dir: Path) -> str | None:
        """A reason to stop ``source`` before its full evaluation, or None to go on."""
        return None

    def state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        pass


def hook_services(evaluator: Any, store: Store, maximize: bool, problem: str,
                  assistant: Assistant) -> HookServices:
    """What hooks get from a run: with a judged task, also a way to score a candidate on a
    subset of the public cases (GEPA's minibatch)."""
    judge = getattr(evaluator, "judge", evaluator)
    cases = getattr(judge, "public_cases", None)
    evaluate_cases = None
    if cases is not None and hasattr(judge, "evaluate_cases"):
        by_id = {str(case.case_id): case for case in cases}

        async def evaluate_cases(source: str, ids: Any, work_dir: Path) -> dict[str, float]:
            chosen = [by_id[i] for i in ids if i in by_id]
            result = await judge.evaluate_cases(source, work_dir, chosen, set_label="minibatch")
            return case_scores(result)

    return HookServices(
        store=store, maximize=maximize, problem=problem, assistant=assistant,
        evaluate_cases=evaluate_cases,
        case_ids=tuple(str(c.case_id) for c in cases) if cases is not None else (),
    )
