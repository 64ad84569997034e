"""``gepa``: Pareto-front parents, reflective guidance, minibatch acceptance and LLM-free merges.

* **Selection** (``pareto.py``): programs compete on every test case the evaluator reports
  (``ProgramRecord.case_scores``; per-objective public metrics when there are no cases). A
  program best or tied best on at least one key, and dominated by no other such program, is on
  the front; the parent is drawn with probability proportional to the number of keys it wins.
* **Reflective mutation**: the proposal carries an instruction to diagnose the parent's
  failures on its weakest cases (listed with their scores) before editing; the evaluator's
  textual feedback is already in the prompt.
* **Minibatch acceptance** (``screen``): when the engine can evaluate a subset of cases, the
  child runs on ``minibatch_size`` random public cases first and is rejected unless its total
  there beats the parent's on the same cases.
* **Merge** (``direct_child``): with probability ``merge_probability``, two front members that
  share an ancestor (and neither descends from the other) are merged region by region without an
  LLM (``code_merge.py``). Each pair is tried once.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from cambrian.config import StrictModel
from cambrian.core.events import Event
from cambrian.core.objective import MAXIMIZE, Objective
from cambrian.search.algorithm import (
    ParentSample,
    ProgramRecord,
    Selector,
    SelectorContext,
)
from cambrian.search.algorithm_spec import AlgorithmSpec
from cambrian.search.algorithms.code_merge import merge_programs
from cambrian.search.algorithms.pareto import (
    ScoreTable,
    common_ancestor,
    metric_objective,
    objective_scores,
    pareto_front,
    weakest_keys,
    wins_against,
)
from cambrian.search.hooks import AlgorithmHooks, DirectChild, HookServices


class GepaOptions(StrictModel):
    minibatch_size: int = Field(3, ge=1)  # public cases a child must improve on before full evaluation
    merge_probability: float = Field(0.1, ge=0, le=1)  # chance a proposal slot tries a merge
    max_merges: int = Field(5, ge=0)  # merged children per run
    weak_cases_shown: int = Field(3, ge=1)  # weakest cases named in the reflective instruction
    # Direction of public metrics used when the task reports no cases (default: the task's).
    metric_directions: dict[str, Literal["maximize", "minimize"]] = Field(default_factory=dict)


class GepaSelector(Selector):
    def __init__(self, context: SelectorContext) -> None:
        super().__init__(context)
        self.options: GepaOptions = context.options
        # Case scores are raw task scores; the hooks set the task's objective before any add.
        self.objective: Objective = MAXIMIZE

    def add(self, program: ProgramRecord, rng: np.random.Generator) -> list[Event]:
        self.record(program)
        return []

    def score_table(self) -> ScoreTable:
        correct = [p for p in self.programs.values() if p.correct and p.fitness is not None]
        use_cases = any(p.case_scores for p in correct)
        return {p.id: objective_scores(p, objective=self.objective, use_cases=use_cases,
                                       metric_directions=self.options.metric_directions)
                for p in sorted(correct, key=lambda p: p.id)}

    def front(self) -> dict[int, int]:
        return pareto_front(self.score_table())

    def sample(self, rng: np.random.Generator) -> ParentSample | None:
        table = self.score_table()
        front = pareto_front(table)
        if not front:
            return None
        ids = list(front)
        weights = np.array([front[i] for i in ids], dtype=float)
        parent_id = ids[int(rng.choice(len(ids), p=weights / weights.sum()))]
        parent = self.programs[parent_id]
        return ParentSample(parent_id, parent.island, guidance=self.reflection(parent_id, table))

    def describe(self) -> dict[str, Any]:
        return {"programs": len(self.programs), "front": self.front()}

    def reflection(self, parent_id: int, table: ScoreTable) -> str:
        """The reflective instruction: diagnose the weakest cases first, then edit."""
        weak = weakest_keys(parent_id, table, self.options.weak_cases_shown)
        weak = [w for w in weak if w.key != "fitness"]
        if not weak:
            return ("Reflect before editing: read the evaluation feedback above, diagnose in one "
                    "or two sentences what limits this program's score, then change the code to "
                    "remove that cause.")
        noun = "cases" if weak[0].key.startswith("case:") else "objectives"

        def raw(value: float, key: str) -> float:
            objective = (self.objective if key.startswith("case:") else metric_objective(
                key.split(":", 1)[1], self.objective, self.options.metric_directions))
            return objective.score(value)

        listed = "; ".join(f"{w.label}: {raw(w.score, w.key):.6g} (best seen {raw(w.best, w.key):.6g})"
                           for w in weak)
        return (f"Reflect before editing. These are the program's weakest {noun}: {listed}. "
                f"First diagnose, from the evaluation feedback above, why it fails or scores "
                f"poorly on these {noun}; state the root cause in one or two sentences. Then "
                f"change the code to fix that cause without losing what already works.")


class GepaHooks(AlgorithmHooks):
    selector: GepaSelector

    def __init__(self, selector: Selector, services: HookServices, options: Any) -> None:
        super().__init__(selector, services, options)
        self.selector.objective = services.objective
        self.attempted_pairs: set[tuple[int, int]] = set()
        self.merges = 0

    # ------------------------------------------------------------------ merge

    def merge_candidates(self) -> list[tuple[int, int, int]]:
        """(a, b, common ancestor) for untried pairs of front members that can be merged."""
        front = sorted(self.selector.front())
        pairs = []
        for i, a in enumerate(front):
            for b in front[i + 1:]:
                if (a, b) in self.attempted_pairs:
                    continue
                ancestor = common_ancestor(a, b, self.selector.programs)
                if ancestor is not None:
                    pairs.append((a, b, ancestor))
        return pairs

    def direct_child(self, rng: np.random.Generator) -> DirectChild | None:
        if self.merges >= self.options.max_merges or self.options.merge_probability <= 0:
            return None
        if rng.random() >= self.options.merge_probability:
            return None
        pairs = self.merge_candidates()
        if not pairs:
            return None
        a, b, ancestor = pairs[int(rng.integers(len(pairs)))]
        self.attempted_pairs.add((a, b))
        table = self.selector.score_table()
        a_wins, b_wins = wins_against(table[a], table[b]), wins_against(table[b], table[a])
        programs = self.selector.programs
        if a_wins != b_wins:
            preferred, other = (a, b) if a_wins > b_wins else (b, a)
        else:
            preferred, other = (a, b) if (programs[a].fitness, -a) >= (programs[b].fitness, -b) else (b, a)
        store = self.services.store
        sources = [store.candidates.get(pid).source for pid in (ancestor, preferred, other)]
        if any(source is None for source in sources):
            return None
        merged = merge_programs(*sources, python=self._is_python())  # type: ignore[arg-type]
        if merged is None:
            return None
        self.merges += 1
        return DirectChild(
            parent_id=preferred, source=merged, operator="merge", other_parent_ids=(other,),
            description=f"merge of {preferred} and {other} (common ancestor {ancestor}), "
                        f"{preferred} preferred where both changed the same region",
        )

    def _is_python(self) -> bool:
        filename = self.services.store.meta.get("program_filename") or ""
        return filename.endswith(".py")

    # ------------------------------------------------------------------ minibatch

    async def screen(self, source: str, parent_id: int | None, work_dir: Path) -> str | None:
        evaluate = self.services.evaluate_cases
        parent = self.selector.programs.get(parent_id) if parent_id is not None else None
        # A fix of a failing parent is not held to the parent's case scores.
        if evaluate is None or parent is None or not parent.correct or not parent.case_scores:
            return None
        pool = [c for c in self.services.case_ids if c in parent.case_scores]
        size = min(self.options.minibatch_size, len(pool))
        if size == 0:
            return None
        # Seeded by the source, so a re-screen after a crash draws the same minibatch.
        seed = int(hashlib.sha256(source.encode()).hexdigest()[:16], 16)
        picks = np.random.default_rng(seed).choice(len(pool), size=size, replace=False)
        cases = [pool[int(i)] for i in sorted(picks)]
        child_scores = await evaluate(source, cases, work_dir / "minibatch")
        missing = [c for c in cases if c not in child_scores]
        if missing:
            return f"minibatch: the child produced no score on case(s) {', '.join(missing)}"
        child_total = sum(child_scores[c] for c in cases)
        parent_total = sum(parent.case_scores[c] for c in cases)
        if self.services.objective.gain(child_total, parent_total) <= 0:
            return (f"minibatch: the child's total {child_total:.6g} on cases {', '.join(cases)} "
                    f"is not better than parent {parent.id}'s {parent_total:.6g}")
        return None

    # ------------------------------------------------------------------ state

    def state(self) -> dict[str, Any]:
        return {"attempted_pairs": sorted([a, b] for a, b in self.attempted_pairs),
                "merges": self.merges}

    def load_state(self, state: dict[str, Any]) -> None:
        self.attempted_pairs = {(int(a), int(b)) for a, b in state.get("attempted_pairs", [])}
        self.merges = int(state.get("merges", 0))


SPEC = AlgorithmSpec(
    "gepa",
    "Pareto front over test cases, reflective guidance, minibatch acceptance, LLM-free merges",
    GepaOptions, GepaSelector, hooks=GepaHooks,
)
