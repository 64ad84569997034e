"""Decomposition (seed 004 §10.2-10.3, §10.10): a task's test cases split into sub-problems
(`decomposition.subproblems`, declared by the task, or proposed by the model from the initial
program's per-case results when `decomposition.propose` is on: `meta/subproblem_proposal.py`),
each with its own population and share of the proposals, their leaders combined, and a
strategy that wins in one offered to the others.

- **Populations**: every evaluated program is scored on each sub-problem by its per-case
  results (the mean over the sub-problem's cases, as fitness); a sub-problem's population is its
  `population` best programs, rebuilt from the store on resume.
- **Budget share** (seed 004 §10.2, sub-task-aware selection): a steered proposal picks a
  sub-problem by softmax over its improvement potential, the gap between its leader and the
  virtual best of its cases (every case's best score by any program), times its importance;
  `steer_share` of the proposals are steered so, the rest are the search's own.
- **Transfer** (seed 004 §10.10): when the leader of one sub-problem has a strategy family
  (from the strategy tags) no other program of another sub-problem's population has, the next
  proposal on that other sub-problem shows it as inspiration with "adapt this approach", and a
  `strategy_transfer` event records it, once per family and target.
- **Combination**: every `combine_every` evaluations, once the leaders changed, a task's
  combiner (`combine(sources) -> source`, called contained) builds one program from the leaders,
  stored and evaluated as a child (operator `combine`); without one, a crossover of the two
  leaders that differ most is proposed to the model.
"""

from __future__ import annotations

import fnmatch
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cambrian.config.decomposition import DecompositionConfig, SubproblemConfig
from cambrian.core.evaluation import case_scores
from cambrian.core.events import StrategyTransfer, SubproblemsProposed, SubsolutionsCombined
from cambrian.core.hooks import DirectChild, LoopHook, SlotContext, SlotTaken, Steering
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.case_feedback import stored_cases
from cambrian.evaluate.task_function import TaskFunctionFailed, call_task_function
from cambrian.meta.subproblem_proposal import (
    SubproblemProposer,
    case_lines,
    proposed_subproblems,
)
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store

log = logging.getLogger(__name__)
NOTE_KEY = "subproblem"


class SubproblemBook:
    """Every program's fitness on every sub-problem, each sub-problem's leaders and the best
    fitness any program reached on each case (higher is better: objective fitness)."""

    def __init__(self, subproblems: Sequence[SubproblemConfig], objective: Objective,
                 population: int) -> None:
        self.subproblems = list(subproblems)
        self.objective = objective
        self.population = population
        self.fitness: dict[str, dict[int, float]] = {s.name: {} for s in self.subproblems}
        self.case_best: dict[str, float] = {}
        self._case_owner: dict[str, str | None] = {}

    def subproblem_of(self, case_id: str) -> str | None:
        if case_id not in self._case_owner:
            self._case_owner[case_id] = next(
                (s.name for s in self.subproblems
                 if any(fnmatch.fnmatchcase(case_id, p) for p in s.cases)), None)
        return self._case_owner[case_id]

    def observe(self, candidate_id: int, cases: Mapping[str, float]) -> None:
        by_subproblem: dict[str, list[float]] = {}
        for case_id, score in cases.items():
            owner = self.subproblem_of(case_id)
            if owner is None or not math.isfinite(score):
                continue
            fitness = self.objective.fitness(score)
            by_subproblem.setdefault(owner, []).append(fitness)
            self.case_best[case_id] = max(self.case_best.get(case_id, -math.inf), fitness)
        for name, values in by_subproblem.items():
            self.fitness[name][candidate_id] = sum(values) / len(values)

    def leaders(self, name: str) -> list[tuple[int, float]]:
        """The sub-problem's population: its best programs, best first (the earliest of
        equals first)."""
        ranked = sorted(self.fitness[name].items(), key=lambda item: (-item[1], item[0]))
        return ranked[:self.population]

    def virtual_best(self, name: str) -> float | None:
        """The mean over the sub-problem's cases of each case's best fitness (seed 004's
        theoretical maximum, as far as the run has seen)."""
        values = [best for case_id, best in self.case_best.items()
                  if self.subproblem_of(case_id) == name]
        return sum(values) / len(values) if values else None

    def potentials(self) -> dict[str, float]:
        """(virtual best - leader) relative to the virtual best, times the importance."""
        potentials = {}
        for sub in self.subproblems:
            leaders, ceiling = self.leaders(sub.name), self.virtual_best(sub.name)
            if not leaders or ceiling is None:
                potentials[sub.name] = sub.importance  # nothing known: as much as it weighs
                continue
            gap = max(0.0, ceiling - leaders[0][1]) / max(abs(ceiling), 1e-12)
            potentials[sub.name] = gap * sub.importance
        return potentials

    def shares(self, temperature: float) -> dict[str, float]:
        """Seed 004 §10.2: softmax over the potentials."""
        potentials = self.potentials()
        top = max(potentials.values())
        weights = {name: math.exp((value - top) / temperature)
                   for name, value in potentials.items()}
        total = sum(weights.values())
        return {name: weight / total for name, weight in weights.items()}


class Decomposition(LoopHook):
    name = "decomposition"

    def __init__(self, config: DecompositionConfig, store: Store, recorder: Recorder,
                 objective: Objective, *, task_root: Path, work_root: Path,
                 record_child: Callable[[int, DirectChild], int | None],
                 families: Callable[[], Mapping[int, str]] = dict,
                 proposer: SubproblemProposer | None = None,
                 case_headers: Callable[[], Mapping[str, str]] = dict) -> None:
        """``families()``: the strategy family of each tagged program (empty: no niches).
        ``proposer``: asks the model for sub-problems when the config declares none;
        ``case_headers()``: the first input line of each public case, for its prompt."""
        self.config = config
        self.store = store
        self.recorder = recorder
        self.objective = objective
        self.proposer = proposer
        self.case_headers = case_headers
        self.subproblems: list[SubproblemConfig] = list(config.subproblems)
        self._proposal: SubproblemsProposed | None = None
        self.book = SubproblemBook(self.subproblems, objective, config.population)
        self.combiner = task_root / config.combiner if config.combiner else None
        self.work_root = work_root
        self.record_child = record_child
        self.families = families
        self._note: str | None = None
        self._combined: set[tuple[int, ...]] = set()
        self._transferred: set[tuple[str, str]] = set()
        self._crossover: tuple[int, int] | None = None
        self._last_combined_at = 0

    # ------------------------------------------------------------------ populations

    @property
    def active(self) -> bool:
        """Sub-problems are known (declared, or proposed and accepted)."""
        return len(self.subproblems) >= 2

    def _adopt(self, subproblems: list[SubproblemConfig]) -> None:
        """These sub-problems, every stored correct program ranked on each."""
        self.subproblems = subproblems
        self.book = SubproblemBook(subproblems, self.objective, self.config.population)
        correct = [row.id for row in self.store.candidates.list(CandidateStatus.CORRECT)]
        for candidate_id, result in self.store.evaluations.latest_of(set(correct)).items():
            self.book.observe(candidate_id, case_scores(result))

    async def _propose(self) -> None:
        """Once per run: the model's sub-problems from the initial program's cases."""
        assert self.proposer is not None
        correct = self.store.candidates.list(CandidateStatus.CORRECT)
        if not correct:
            return  # asked again once a program is correct
        initial = min(correct, key=lambda row: row.id)
        result = self.store.evaluations.latest(initial.id)
        cases = stored_cases(result.extra) if result is not None else ()
        if len(cases) < 2:
            self._proposal = self.proposer.record_none(
                "the evaluator reports no per-case results to group")
            return
        self._proposal = await self.proposer.propose(case_lines(cases, self.case_headers()))
        if self._proposal.subproblems:
            self._adopt(proposed_subproblems(self._proposal))

    def restore(self) -> None:
        subproblems = list(self.config.subproblems)
        if not subproblems:
            proposals = self.store.events.of_type(SubproblemsProposed)
            self._proposal = proposals[-1] if proposals else None
            subproblems = proposed_subproblems(self._proposal)
        self._adopt(subproblems)
        for event in self.store.events.of_type(StrategyTransfer):
            self._transferred.add((event.family, event.target))
        for combined in self.store.events.of_type(SubsolutionsCombined):
            self._combined.add(tuple(combined.sources))

    def observe(self, candidate_id: int) -> None:
        """A committed program (the committer's listener)."""
        row = self.store.candidates.get(candidate_id)
        result = self.store.evaluations.latest(candidate_id)
        if row.status is CandidateStatus.CORRECT and result is not None:
            self.book.observe(candidate_id, case_scores(result))

    def leaders(self) -> dict[str, int]:
        return {name: ranked[0][0] for name in self.book.fitness
                if (ranked := self.book.leaders(name))}

    # ------------------------------------------------------------------ steering

    def steer(self, rng: Any) -> Steering | None:
        self._note = None
        if not self.active:
            return None
        if self._crossover is not None:
            first, second = self._crossover
            self._crossover = None
            self._note = ("Combine: the program shown leads some of the task's sub-problems and "
                          "the other program leads others. Write one program that uses each "
                          "one's approach on the kind of cases it is strong on.")
            return Steering(restart_parent=first, inspirations=(second,), intent="crossover",
                            tags={NOTE_KEY: "combine"})
        if rng is None or float(rng.random()) >= self.config.steer_share:
            return None
        shares = self.book.shares(self.config.temperature)
        names = list(shares)
        name = names[int(rng.choice(len(names), p=np.array([shares[n] for n in names])))]
        leaders = self.book.leaders(name)
        if not leaders:
            return None
        # Rank-weighted within the population: the leader most often (halving per rank).
        ranks = np.array([0.5 ** rank for rank in range(len(leaders))])
        parent = leaders[int(rng.choice(len(leaders), p=ranks / ranks.sum()))][0]
        sub = next(s for s in self.subproblems if s.name == name)
        about = f" ({sub.description})" if sub.description else ""
        self._note = (f"This proposal works on the sub-problem '{name}'{about}: its cases "
                      f"{', '.join(sub.cases)}. Improve the program on those cases without "
                      "losing the others.")
        inspirations = self._transfer(name, leaders)
        return Steering(restart_parent=parent, inspirations=inspirations,
                        tags={NOTE_KEY: name})

    def _transfer(self, target: str, leaders: list[tuple[int, float]]) -> tuple[int, ...] | None:
        families = self.families()
        if not families:
            return None
        for source, leader in self.leaders().items():
            family = families.get(leader)
            # Every program is ranked on every sub-problem: the source's leader itself does not
            # count as the target having tried its family.
            present = {families.get(i) for i, _ in leaders if i != leader}
            if source == target or family is None or family in present:
                continue
            if (family, target) in self._transferred:
                continue
            self._transferred.add((family, target))
            self.recorder.emit(StrategyTransfer(source=source, target=target, family=family,
                                                candidate_id=leader))
            self._note = (self._note or "") + (
                f" Strategy transfer: the program shown beside it leads the sub-problem "
                f"'{source}' with a {family} approach; adapt that approach to these cases.")
            return (leader,)
        return None

    def prompt_notes(self, rng: Any) -> tuple[str, ...]:
        note, self._note = self._note, None
        return (note,) if note else ()

    # ------------------------------------------------------------------ combination

    async def take_slot(self, slot: SlotContext) -> SlotTaken | None:
        if self.proposer is not None and self._proposal is None and not self.active:
            await self._propose()
            return None
        if not self.active:
            return None
        if slot.children_evaluated - self._last_combined_at < self.config.combine_every:
            return None
        leaders = self.leaders()
        sources = tuple(sorted(set(leaders.values())))
        if len(leaders) < len(self.subproblems) or len(sources) < 2 \
                or sources in self._combined:
            return None
        self._last_combined_at = slot.children_evaluated
        self._combined.add(sources)
        if self.combiner is None:
            self._crossover = (sources[0], sources[1])
            self.recorder.emit(SubsolutionsCombined(sources=list(sources), method="crossover",
                                                    child_id=None, error=""))
            return None  # the next proposal is the crossover (steer)
        return await self._combine(slot, leaders, sources)

    async def _combine(self, slot: SlotContext, leaders: dict[str, int],
                       sources: tuple[int, ...]) -> SlotTaken | None:
        texts = self.store.candidates.sources(set(sources))
        argument = {name: texts.get(candidate_id) or "" for name, candidate_id in leaders.items()}
        assert self.combiner is not None
        try:
            combined = await call_task_function(
                self.combiner, "combine", argument, work_dir=self.work_root / "combiner")
        except TaskFunctionFailed as failure:
            log.warning("decomposition: %s", failure)
            self.recorder.emit(SubsolutionsCombined(sources=list(sources), method="combiner",
                                                    child_id=None, error=str(failure)))
            return None
        if not isinstance(combined, str) or not combined.strip():
            self.recorder.emit(SubsolutionsCombined(
                sources=list(sources), method="combiner", child_id=None,
                error="combine() returned no program text"))
            return None
        child = DirectChild(parent_id=sources[0], source=combined, operator="combine",
                            description="the sub-problems' leaders combined by the task's "
                                        "combiner", other_parent_ids=sources[1:],
                            notes={NOTE_KEY: "combine",
                                   "combined": {n: i for n, i in leaders.items()}})
        child_id = self.record_child(slot.generation, child)
        self.recorder.emit(SubsolutionsCombined(sources=list(sources), method="combiner",
                                                child_id=child_id, error=""))
        return SlotTaken(child_id)
