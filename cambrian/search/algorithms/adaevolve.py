"""``adaevolve``: progress-aware islands (seed 003, "#1: AdaEvolve: Progress-Aware Guidance").

Three levels of adaptation, all driven by improvements measured as fractions of the task's own
observed score range (``adaptive.py``), so no threshold depends on the score's scale:

1. **Search intensity per island.** Each island accumulates an improvement signal ``G`` that
   grows with its improvements and decays while it is stuck. The intensity derived from ``G`` is
   the probability of an *exploring* proposal (a random island member, told to try a different
   approach); otherwise the proposal *refines* the island's best (or, for ``1 - exploit_share``
   of those, a fitness-weighted member with no extra instruction).
2. **Island scheduling** by UCB over the islands' decayed improvement rewards, and a new island
   (seeded from the global best, or from a diverse good program) when every island has gone
   ``stagnation_window`` of its own evaluations without improving.
3. **Paradigm breakthrough.** When the global best has not improved for ``breakthrough_window``
   evaluations, the loop hook asks the LLM for one short new high-level direction; the next
   ``guidance_uses`` proposals start from the global best and carry it.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from cambrian.config import StrictModel
from cambrian.core.events import Event
from cambrian.core.hooks import StepFailed
from cambrian.search.algorithm import (
    ParentSample,
    ProgramRecord,
    Selector,
    SelectorContext,
)
from cambrian.search.algorithm_events import (
    AlgorithmGuidance,
    AlgorithmGuidanceFailed,
    IslandSpawned,
)
from cambrian.search.algorithm_spec import AlgorithmSpec
from cambrian.search.algorithms.adaptive import (
    IslandProgress,
    ScoreRange,
    intensity,
    normalised_improvement,
    ucb_island,
)
from cambrian.search.algorithms.openevolve import fitness_proportional
from cambrian.search.hooks import AlgorithmHooks
from cambrian.task.blocks import BlockError, block_contents

EXPLORE_GUIDANCE = ("Explore: progress on this line of programs has slowed. Try a substantially "
                    "different approach or algorithm, not a small tweak of the current one.")
REFINE_GUIDANCE = ("Refine: this line of programs is improving. Make a focused improvement of "
                   "the current approach; keep what works.")


class AdaEvolveOptions(StrictModel):
    """Islands start at ``database.num_islands``. Counts are evaluations; every improvement
    threshold is a fraction of the observed score range (best - worst so far)."""

    decay: float = Field(0.9, gt=0, lt=1)  # rho for G and the UCB statistics
    intensity_min: float = Field(0.15, ge=0, le=1)
    intensity_max: float = Field(0.5, ge=0, le=1)
    exploit_share: float = Field(0.7, ge=0, le=1)  # of non-exploring proposals, refine the best
    min_improvement: float = Field(0.0, ge=0, lt=1)  # smaller gains (fraction of range) do not count
    ucb_exploration: float = Field(1.41, ge=0)
    min_visits: int = Field(2, ge=1)  # evaluations an island gets before UCB ranks it
    max_islands: int = Field(5, ge=1)
    stagnation_window: int = Field(10, ge=1)  # an island is stuck after this many without gain
    spawn_cooldown: int = Field(15, ge=0)  # evaluations between island spawns
    spawn_seed: Literal["best", "diverse"] = "best"
    breakthrough_window: int = Field(12, ge=1)  # evaluations without global gain -> new direction
    guidance_uses: int = Field(3, ge=1)  # proposals that carry one new direction
    guidance_max_tokens: int = Field(300, gt=0)
    num_inspirations: int = Field(2, ge=0)

    @model_validator(mode="after")
    def _check(self) -> AdaEvolveOptions:
        if self.intensity_min > self.intensity_max:
            raise ValueError("intensity_min must not exceed intensity_max")
        return self


class AdaEvolveSelector(Selector):
    def __init__(self, context: SelectorContext) -> None:
        super().__init__(context)
        self.options: AdaEvolveOptions = context.options
        self.observed = ScoreRange()
        self.islands = [IslandProgress() for _ in range(context.num_islands)]
        self.evaluations = 0  # evaluated children (the initial program excluded)
        self.since_global_improvement = 0
        self.last_spawn = 0
        # Set by the paradigm-breakthrough hook; consumed by sample (so kept in state()).
        self.guidance = ""
        self.guidance_left = 0

    # ------------------------------------------------------------------ progress

    def add(self, program: ProgramRecord, rng: np.random.Generator) -> list[Event]:
        self.record(program)
        fitness = program.fitness if program.correct else None
        previous_best = self.observed.best
        if fitness is not None:
            self.observed.observe(fitness)
        if program.id == self.context.initial_id:
            if fitness is not None:
                for island in self.islands:
                    island.seed(program.id, fitness)
            return []
        self.evaluations += 1
        island = self.islands[program.island % len(self.islands)]
        island.observe(program.id, fitness, self.observed, self.options.decay,
                       self.options.min_improvement)
        global_gain = (normalised_improvement(fitness, previous_best, self.observed)
                       if fitness is not None else 0.0)
        if global_gain > self.options.min_improvement:
            self.since_global_improvement = 0
        else:
            self.since_global_improvement += 1
        return self._maybe_spawn()

    def _maybe_spawn(self) -> list[Event]:
        options = self.options
        if (len(self.islands) >= options.max_islands or self.observed.best is None
                or self.evaluations - self.last_spawn < options.spawn_cooldown
                or any(i.since_improvement < options.stagnation_window for i in self.islands)):
            return []
        seed = self._spawn_seed()
        island = IslandProgress()
        island.seed(seed.id, seed.fitness)  # type: ignore[arg-type]
        self.islands.append(island)
        self.last_spawn = self.evaluations
        return [IslandSpawned(island=len(self.islands) - 1, seed_id=seed.id,
                              seed_rule=options.spawn_seed, evaluated=self.evaluations)]

    def _spawn_seed(self) -> ProgramRecord:
        best = self.best()
        assert best is not None
        if self.options.spawn_seed == "best":
            return best
        # Diverse: among the better half, the program whose size differs most from the best's.
        ranked = sorted(self._correct(), key=lambda p: (-p.fitness, p.id))  # type: ignore[operator]
        pool = ranked[: max(1, (len(ranked) + 1) // 2)]
        return max(pool, key=lambda p: (abs(p.code_length - best.code_length), p.fitness, -p.id))

    def _correct(self) -> list[ProgramRecord]:
        return [p for p in self.programs.values() if p.correct and p.fitness is not None]

    def island_intensity(self, index: int) -> float:
        return intensity(self.islands[index].g, self.options.intensity_min,
                         self.options.intensity_max)

    # ------------------------------------------------------------------ sampling

    def sample(self, rng: np.random.Generator) -> ParentSample | None:
        best = self.best()
        if best is None:
            return None
        index = ucb_island(self.islands, self.options.ucb_exploration, self.options.min_visits)
        island = self.islands[index]
        members = [self.programs[i] for i in sorted(island.members)
                   if self.programs[i].correct and self.programs[i].fitness is not None] or [best]
        if self.guidance_left > 0:
            self.guidance_left -= 1
            note = (f"New high-level direction (the search had stalled): {self.guidance} "
                    "Apply this direction to the current program.")
            return ParentSample(best.id, index, self._inspirations(members, best), guidance=note)
        explore = self.island_intensity(index)
        draw = rng.random()
        if draw < explore:
            parent, note = members[int(rng.integers(len(members)))], EXPLORE_GUIDANCE
        elif draw < explore + (1 - explore) * self.options.exploit_share:
            parent = max(members, key=lambda p: (p.fitness, -p.id))
            note = REFINE_GUIDANCE
        else:
            parent = members[int(rng.choice(len(members), p=fitness_proportional(members)))]
            note = ""
        return ParentSample(parent.id, index, self._inspirations(members, parent), guidance=note)

    def _inspirations(self, members: list[ProgramRecord], parent: ProgramRecord) -> tuple[int, ...]:
        """Half from the island's best, the rest from the run's best (seed 003: local + global)."""
        wanted = self.options.num_inspirations
        ranked_local = sorted(members, key=lambda p: (-p.fitness, p.id))  # type: ignore[operator]
        ranked_global = sorted(self._correct(), key=lambda p: (-p.fitness, p.id))  # type: ignore[operator]
        picks: list[ProgramRecord] = []
        for pool, limit in ((ranked_local, (wanted + 1) // 2), (ranked_global, wanted)):
            for program in pool:
                if len(picks) >= limit:
                    break
                if program.id != parent.id and program not in picks:
                    picks.append(program)
        picks.sort(key=lambda p: (p.fitness, -p.id))
        return tuple(p.id for p in picks)

    # ------------------------------------------------------------------ state

    def state(self) -> dict[str, Any]:
        return {"guidance": self.guidance, "guidance_left": self.guidance_left}

    def load_state(self, state: dict[str, Any]) -> None:
        self.guidance = str(state.get("guidance", ""))
        self.guidance_left = int(state.get("guidance_left", 0))

    def snapshot(self) -> dict[str, Any]:
        # Island member lists grow with the run; their sizes and bests stay compact.
        return {"programs": len(self.programs),
                "islands": [{"size": len(island.members), "best_id": island.best_id}
                            for island in self.islands]}

    def describe(self) -> dict[str, Any]:
        return {
            "programs": len(self.programs),
            "evaluations": self.evaluations,
            "since_global_improvement": self.since_global_improvement,
            "observed_range": [self.observed.worst, self.observed.best],
            "islands": [{**island.snapshot(), "intensity": self.island_intensity(i)}
                        for i, island in enumerate(self.islands)],
        }


class AdaEvolveHooks(AlgorithmHooks):
    """Paradigm breakthrough: one LLM call for a new direction when global progress stalls."""

    selector: AdaEvolveSelector

    def __init__(self, selector: Selector, services: Any, options: Any) -> None:
        super().__init__(selector, services, options)
        self.history: list[dict[str, Any]] = []
        self.last_request: int | None = None  # selector.evaluations at the last request

    def due(self, evaluated: int) -> bool:
        sel, window = self.selector, self.options.breakthrough_window
        return (sel.guidance_left == 0 and sel.since_global_improvement >= window
                and (self.last_request is None or sel.evaluations - self.last_request >= window))

    async def step(self, evaluated: int) -> list[Event]:
        sel = self.selector
        self.last_request = sel.evaluations
        best = sel.best()
        if best is None:
            return []
        reply = await self.services.ask(
            "paradigm", self.prompt(best), max_tokens=self.options.guidance_max_tokens)
        direction = parse_direction(reply or "")
        if not direction:
            raise StepFailed("no direction in the reply" if reply else "the call failed",
                             [AlgorithmGuidanceFailed(evaluated=sel.evaluations,
                                                      reply=(reply or "")[:500])])
        entry = {"evaluated": sel.evaluations, "best_id": best.id, "guidance": direction}
        self.history.append(entry)
        sel.guidance, sel.guidance_left = direction, self.options.guidance_uses
        return [AlgorithmGuidance(**entry)]

    def prompt(self, best: ProgramRecord) -> str:
        source = self.services.store.candidates.get(best.id).source or ""
        try:
            code = "\n".join(block_contents(source))
        except BlockError:
            code = source
        score = self.services.objective.score(best.fitness)
        metrics = ", ".join(f"{k}={v}" for k, v in sorted(best.metrics.items())) or "none"
        tried = "\n".join(f"- {h['guidance']}" for h in self.history[-5:]) or "- (none yet)"
        return (
            "## Paradigm breakthrough request\n"
            f"An evolutionary code search has not improved its best score for "
            f"{self.selector.since_global_improvement} evaluations.\n\n"
            f"## Problem\n{self.services.problem.strip()[:3000] or '(no statement given)'}\n\n"
            f"## Best program so far (score {score:.6g}; public metrics: {metrics})\n"
            f"```\n{code[:3000]}\n```\n\n"
            f"## Directions already tried\n{tried}\n\n"
            "## Your task\nPropose ONE new high-level direction that could break through the "
            "plateau: a different idea, not a parameter tweak, and not one already tried. Reply "
            "with a single line starting with `DIRECTION:` and at most three sentences."
        )

    def state(self) -> dict[str, Any]:
        return {"history": self.history, "last_request": self.last_request}

    def load_state(self, state: dict[str, Any]) -> None:
        self.history = list(state.get("history", []))
        self.last_request = state.get("last_request")


def parse_direction(reply: str) -> str:
    """The direction text of a reply (after ``DIRECTION:`` when present), one paragraph."""
    match = re.search(r"DIRECTION:\s*(.+?)(?:\n\s*\n|$)", reply, re.DOTALL | re.IGNORECASE)
    text = match.group(1) if match else reply.strip().split("\n\n")[0]
    return " ".join(text.split())[:600]


SPEC = AlgorithmSpec(
    "adaevolve",
    "islands with progress-aware intensity, UCB scheduling, spawning, LLM breakthrough guidance "
    "(SkyDiscover's AdaEvolve)",
    AdaEvolveOptions, AdaEvolveSelector, hooks=AdaEvolveHooks,
)
