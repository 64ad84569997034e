"""An algorithm's loop hooks: the parts of a search algorithm that go beyond choosing a parent.

A selector only decides *which* program to mutate next. Some algorithms also act on the loop
(seed 003's "loop policy"), through the loop-hook interface every hook shares
(``cambrian/core/hooks.py``):

- ``step``: LLM-driven work between proposals, e.g. AdaEvolve's paradigm-breakthrough guidance or
  EvoX rewriting its own selection strategy;
- ``direct_child``: a child made without an LLM (GEPA's merge of two descendants of a common
  ancestor), stored and evaluated like any other child;
- ``screen``: a cheap check before the full evaluation (GEPA's minibatch acceptance).

Hooks keep whatever they cannot derive from the history in ``state()``; the engine persists it
after every commit and hands it back through ``load_state`` on resume.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cambrian.core.evaluation import case_scores
from cambrian.core.hooks import DirectChild, LoopHook, SlotContext, SlotTaken
from cambrian.core.objective import Objective
from cambrian.llm.gateway import LLMGateway
from cambrian.search.algorithm import Selector
from cambrian.store.store import Store

CaseEvaluator = Callable[[str, Sequence[str], Path], Awaitable[dict[str, float]]]
RecordChild = Callable[[int, DirectChild], int | None]


@dataclass
class HookServices:
    """What the engine lends to an algorithm's hooks."""

    store: Store
    objective: Objective
    problem: str  # the task's public problem statement
    gateway: LLMGateway
    model_label: str  # the model of the run's own requests (meta.model)
    record_child: RecordChild  # stores an LLM-free child as pending; its id (None: a duplicate)
    evaluate_cases: CaseEvaluator | None = None  # evaluate a source on a subset of test cases
    case_ids: tuple[str, ...] = ()  # the public cases evaluate_cases accepts

    async def ask(self, purpose: str, prompt: str, **options: Any) -> str | None:
        """The reply text, or None when the call failed or a budget cap forbade it (both are
        recorded by the gateway)."""
        result = await self.gateway.ask(purpose, prompt, label=self.model_label, **options)
        return result.text


class AlgorithmHooks(LoopHook):
    """Default: no loop behaviour beyond the selector. Subclasses override what they need."""

    name = "algorithm hooks"

    def __init__(self, selector: Selector, services: HookServices, options: Any) -> None:
        self.selector = selector
        self.services = services
        self.options = options

    def direct_child(self, rng: np.random.Generator) -> DirectChild | None:
        return None

    async def take_slot(self, slot: SlotContext) -> SlotTaken | None:
        child = self.direct_child(slot.rng)
        if child is None:
            return None
        return SlotTaken(self.services.record_child(slot.generation, child))


def case_evaluator(evaluator: Any) -> tuple[CaseEvaluator | None, tuple[str, ...]]:
    """With a judged task, a way to score a candidate on a subset of the public cases (GEPA's
    minibatch) and the ids of those cases; (None, ()) otherwise."""
    judge = getattr(evaluator, "judge", evaluator)
    cases = getattr(judge, "public_cases", None)
    if cases is None or not hasattr(judge, "evaluate_cases"):
        return None, ()
    by_id = {str(case.case_id): case for case in cases}

    async def evaluate_cases(source: str, ids: Any, work_dir: Path) -> dict[str, float]:
        chosen = [by_id[i] for i in ids if i in by_id]
        result = await judge.evaluate_cases(source, work_dir, chosen, set_label="minibatch")
        return case_scores(result)

    return evaluate_cases, tuple(str(c.case_id) for c in cases)
