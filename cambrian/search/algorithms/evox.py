"""``evox``: the parent-selection strategy is itself a program the LLM rewrites (seed 003, "#2: EvoX:
Meta-Evolving the Optimization Strategy").

The selector calls ``select(programs, rng) -> id`` (``strategy_sandbox.py``), starting from a
built-in tournament strategy. When the best score has not improved for ``stall_window``
evaluations, the loop hook shows the LLM the current strategy and the recent progress and asks
for a rewrite. A candidate is installed only after it compiled, defined ``select`` and returned
valid ids on synthetic archives and on the real one for several seeds, in a separate process
with a time limit. If the installed strategy later raises, times out or returns an invalid id,
the previous valid strategy is restored (and that is recorded as an event).

Current and previous strategy sources live in ``state()``, so a resume reinstalls them.
"""

from __future__ import annotations

import random
import re
from typing import Any

import numpy as np
from pydantic import Field

from cambrian.config import StrictModel
from cambrian.core.events import Event
from cambrian.core.hooks import StepFailed
from cambrian.search.algorithm import (
    ParentSample,
    ProgramRecord,
    Selector,
    SelectorContext,
)
from cambrian.search.algorithm_events import StrategyRejected, StrategyRollback, StrategySwap
from cambrian.search.algorithm_spec import AlgorithmSpec
from cambrian.search.algorithms import strategy_sandbox
from cambrian.search.algorithms.strategy_sandbox import StrategyError
from cambrian.search.hooks import AlgorithmHooks

DEFAULT_STRATEGY = '''def select(programs, rng):
    """Tournament of three, favouring programs with fewer children; one pick in five is uniform."""
    if rng.random() < 0.2:
        return rng.choice(programs)["id"]
    contenders = [rng.choice(programs) for _ in range(3)]
    best = max(contenders, key=lambda p: (p["fitness"], -p["children"]))
    return best["id"]
'''

# Shapes a strategy must cope with besides the real archive: a single program, ties, negative
# fitness, several islands, many programs.
SYNTHETIC_ARCHIVES: list[list[dict[str, Any]]] = [
    [{"id": 1, "fitness": 0.0, "generation": 0, "children": 0, "island": 0, "code_length": 120}],
    [{"id": i, "fitness": float(-(i % 4)), "generation": i, "children": i % 3, "island": i % 2,
      "code_length": 100 + 7 * i} for i in range(3, 10)],
    [{"id": 100 + i, "fitness": 1e6 * ((i * 37) % 11), "generation": i // 3, "children": i % 5,
      "island": i % 3, "code_length": 50 * i} for i in range(40)],
]


class EvoxOptions(StrictModel):
    stall_window: int = Field(10, ge=1)  # evaluations without a new best before a rewrite
    num_inspirations: int = Field(2, ge=0)  # the best other programs shown with the parent
    validation_seeds: int = Field(5, ge=1)  # rng seeds each test archive is sampled with
    validation_timeout_s: float = Field(10.0, gt=0)  # whole validation (separate process)
    call_timeout_s: float = Field(0.5, gt=0)  # one select() call
    rewrite_max_tokens: int = Field(1500, gt=0)
    recent_shown: int = Field(12, ge=1)  # recent evaluations described in the rewrite prompt


def program_dict(program: ProgramRecord) -> dict[str, Any]:
    return {"id": program.id, "fitness": program.fitness, "generation": program.generation,
            "children": program.children, "island": program.island,
            "code_length": program.code_length}


class EvoxSelector(Selector):
    def __init__(self, context: SelectorContext) -> None:
        super().__init__(context)
        self.options: EvoxOptions = context.options
        self.strategy_source = DEFAULT_STRATEGY
        self.previous_source: str | None = None
        self.strategy = strategy_sandbox.load_strategy(DEFAULT_STRATEGY)
        self.pending_events: list[Event] = []  # rollbacks found while sampling
        self.evaluations = 0
        self.since_improvement = 0
        self.best_history: list[tuple[int, float]] = []  # (evaluations, new best fitness)

    def add(self, program: ProgramRecord, rng: np.random.Generator) -> list[Event]:
        best = self.best()
        self.record(program)
        if program.id != self.context.initial_id:
            self.evaluations += 1
        improved = (program.correct and program.fitness is not None
                    and (best is None or program.fitness > best.fitness))  # type: ignore[operator]
        if improved:
            self.since_improvement = 0
            self.best_history.append((self.evaluations, float(program.fitness)))  # type: ignore[arg-type]
        elif program.id != self.context.initial_id:
            self.since_improvement += 1
        return []

    def archive(self) -> list[dict[str, Any]]:
        correct = [p for p in self.programs.values() if p.correct and p.fitness is not None]
        return [program_dict(p) for p in sorted(correct, key=lambda p: p.id)]

    # ------------------------------------------------------------------ strategies

    def install(self, source: str) -> None:
        """Swap in an already validated strategy, keeping the current one to fall back on."""
        self.strategy = strategy_sandbox.load_strategy(source)
        self.previous_source, self.strategy_source = self.strategy_source, source

    def _roll_back(self, error: str) -> None:
        failed = self.strategy_source
        restored = self.previous_source or DEFAULT_STRATEGY
        if restored == failed:
            restored = DEFAULT_STRATEGY
        self.strategy = strategy_sandbox.load_strategy(restored)
        self.strategy_source, self.previous_source = restored, None
        self.pending_events.append(StrategyRollback(
            error=error, failed_source=failed, restored_source=restored,
            evaluated=self.evaluations))

    def sample(self, rng: np.random.Generator) -> ParentSample | None:
        archive = self.archive()
        if not archive:
            return None
        seed = int(rng.integers(2**62))
        while True:
            try:
                chosen = strategy_sandbox.call_with_deadline(
                    self.strategy, archive, random.Random(seed), self.options.call_timeout_s)
                break
            except StrategyError as exc:
                if self.strategy_source == DEFAULT_STRATEGY:
                    raise  # the built-in strategy cannot fail on a non-empty archive
                self._roll_back(str(exc))
        parent = self.programs[chosen]
        others = sorted((p for p in self.programs.values()
                         if p.correct and p.fitness is not None and p.id != chosen),
                        key=lambda p: (-p.fitness, p.id))[: self.options.num_inspirations]  # type: ignore[operator]
        others.reverse()  # strongest closest to the instructions
        return ParentSample(chosen, parent.island, tuple(p.id for p in others))

    def state(self) -> dict[str, Any]:
        return {"strategy": self.strategy_source, "previous": self.previous_source}

    def load_state(self, state: dict[str, Any]) -> None:
        source = state.get("strategy") or DEFAULT_STRATEGY
        try:
            self.strategy = strategy_sandbox.load_strategy(source)
        except StrategyError:
            source = DEFAULT_STRATEGY
            self.strategy = strategy_sandbox.load_strategy(source)
        self.strategy_source, self.previous_source = source, state.get("previous")

    def describe(self) -> dict[str, Any]:
        return {"programs": len(self.programs), "evaluations": self.evaluations,
                "since_improvement": self.since_improvement,
                "custom_strategy": self.strategy_source != DEFAULT_STRATEGY}


class EvoxHooks(AlgorithmHooks):
    """Rewrites the strategy on stalls and records rollbacks the selector ran into."""

    selector: EvoxSelector

    def __init__(self, selector: Selector, services: Any, options: Any) -> None:
        super().__init__(selector, services, options)
        self.last_attempt: int | None = None  # selector.evaluations at the last rewrite
        self.attempts: list[dict[str, Any]] = []

    def _stalled(self) -> bool:
        sel, window = self.selector, self.options.stall_window
        return (sel.since_improvement >= window and sel.best() is not None
                and (self.last_attempt is None or sel.evaluations - self.last_attempt >= window))

    def due(self, evaluated: int) -> bool:
        return bool(self.selector.pending_events) or self._stalled()

    async def step(self, evaluated: int) -> list[Event]:
        events, self.selector.pending_events = self.selector.pending_events, []
        if self._stalled():
            outcome = await self.rewrite()
            events.append(outcome)
            if isinstance(outcome, StrategyRejected):
                raise StepFailed(f"strategy rejected: {outcome.error}", events)
        return events

    async def rewrite(self) -> Event:
        sel = self.selector
        self.last_attempt = sel.evaluations
        reply = await self.services.ask(
            "strategy", self.prompt(), max_tokens=self.options.rewrite_max_tokens, temperature=0.7)
        source = extract_code(reply or "")
        error = "the reply holds no code block" if source is None else await self.validate(source)
        # Proposals go on while a rewrite is validated (side work holds them back only for the
        # call): the next window starts when this outcome takes effect.
        self.last_attempt = sel.evaluations
        outcome = {"evaluated": sel.evaluations, "accepted": error is None, "error": error}
        self.attempts.append(outcome)
        if error is not None:
            return StrategyRejected(**outcome, source=source or (reply or "")[:2000])
        assert source is not None
        sel.install(source)
        return StrategySwap(evaluated=sel.evaluations, source=source,
                            previous_source=sel.previous_source)

    async def validate(self, source: str) -> str | None:
        archives = SYNTHETIC_ARCHIVES + [self.selector.archive()]
        return await strategy_sandbox.validate(
            source, archives, list(range(self.options.validation_seeds)),
            timeout_s=self.options.validation_timeout_s, call_seconds=self.options.call_timeout_s)

    def prompt(self) -> str:
        sel = self.selector
        recent = sorted(sel.programs.values(), key=lambda p: p.id)[-self.options.recent_shown:]
        lines = [f"- program {p.id} (parent {p.parent_id}, island {p.island}): "
                 + (f"fitness {p.fitness:.6g}" if p.correct and p.fitness is not None else "failed")
                 for p in recent]
        bests = ", ".join(f"{f:.6g} at evaluation {n}" for n, f in sel.best_history[-8:]) or "none"
        return (
            "## Rewrite the parent-selection strategy\n"
            "An evolutionary code search picks the parent of each new program with the strategy "
            f"below. The best fitness has not improved for {sel.since_improvement} evaluations "
            f"({sel.evaluations} evaluations so far, {len(sel.archive())} correct programs).\n\n"
            f"## Current strategy\n```python\n{sel.strategy_source.strip()}\n```\n\n"
            f"## Recent progress\nNew bests (fitness, higher is better): {bests}\n"
            "Most recent evaluations:\n" + "\n".join(lines) + "\n\n"
            "## Contract\n"
            "Define `def select(programs, rng) -> int`. `programs` is a non-empty list of dicts "
            "with keys id, fitness (higher is better), generation, children, island, code_length; "
            "`rng` is a `random.Random`. Return the `id` of one of the programs. Use only "
            "builtins and the modules math, random, statistics, heapq, bisect, itertools, "
            "functools, collections. Keep it fast (well under a second).\n\n"
            "## Your task\nWrite a strategy that better balances exploring and exploiting for this "
            "stage of the search. Reply with the complete code in one ```python block."
        )

    def state(self) -> dict[str, Any]:
        return {"last_attempt": self.last_attempt, "attempts": self.attempts[-50:]}

    def load_state(self, state: dict[str, Any]) -> None:
        self.last_attempt = state.get("last_attempt")
        self.attempts = list(state.get("attempts", []))


def extract_code(reply: str) -> str | None:
    """The first fenced code block of ``reply`` (preferring a python one)."""
    blocks = re.findall(r"```([a-zA-Z0-9_+-]*)\n(.*?)```", reply, re.DOTALL)
    if not blocks:
        return None
    python = [code for lang, code in blocks if lang.lower() in ("python", "py")]
    return (python or [blocks[0][1]])[0].strip() + "\n"


SPEC = AlgorithmSpec(
    "evox",
    "LLM-rewritten parent-selection strategy, validated in isolation, rolled back on failure "
    "(SkyDiscover's EvoX)",
    EvoxOptions, EvoxSelector, hooks=EvoxHooks,
)
