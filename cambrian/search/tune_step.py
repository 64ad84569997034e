"""The ``tune`` mutation operator (seed 001 §5.4, B.9, as one step of the search).

The tuning-gap analysis shows that much of an evolutionary gain is parametric: a program's
numeric knobs, tuned by Bayesian optimisation with its structure fixed, often reach what many
LLM edits reach. With ``trace_feedback.tune_operator`` on, the search does that itself: every
``tune_every`` evaluated children, one generation's proposal slot runs a tune step instead of
asking the LLM for code:

1. the parent is the best correct program that has not been tuned before;
2. its knobs are found without an LLM (:func:`cambrian.task.knobs.find_knobs`; EVOLVE-BLOCK
   literals only) and exposed as a ``PARAMS`` block (Python) or ``#define`` block (C, C++);
3. :func:`cambrian.trace.tuning.tune_program` runs ``tune_budget`` trials plus one at the
   defaults through the task's own evaluator, one at a time, each in a scratch folder: first
   one-knob steps of 10%, then 25%, around the program's values (the parent works; a few
   points drawn from intervals a hundred times wide mostly break it), then one random point,
   then Gaussian-process acquisitions (at least one);
4. when the best trial beats the parent, the tuned program (the parent's layout with the best
   values written into its literals) becomes the child: operator ``tune``, edge ``tune``,
   ``notes.tuning`` holding knobs, values, trial scores and the trial count. It then goes
   through the evaluation queue like every other child (the LLM-free child path of
   ``commit.py``).

Each step is recorded as a ``tune`` event in the same transaction as its child (or alone when
nothing improved), and the operator's state (steps taken, programs tuned) is read back from
those events, so a resumed run neither repeats a finished step nor skips a due one; a step
interrupted by a kill left nothing behind and simply runs again, with the same seed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from cambrian.config import TraceFeedbackConfig
from cambrian.core.evaluation import EvaluationResult, score_of
from cambrian.core.events import TuneStepped
from cambrian.core.hooks import DirectChild, LoopHook, SlotContext, SlotTaken
from cambrian.core.objective import Objective
from cambrian.search.algorithm import ProgramRecord
from cambrian.store.recorder import Recorder
from cambrian.task.blocks import BlockError, check_immutable_unchanged
from cambrian.trace.tuning import TuningResult, tune_program

# Languages whose knobs tune_program can expose (a PARAMS dict; a #define block).
TUNABLE_LANGUAGES = frozenset({"python", "c", "cpp"})
MIN_TUNE_TRIALS = 3  # fewer evaluations left than this: no tune step (too few to search)

log = logging.getLogger(__name__)

Evaluate = Callable[[str, Path], Awaitable[EvaluationResult]]
RecordChild = Callable[[int, DirectChild], int | None]


class _Stopped(Exception):
    """A budget cap was reached during the step."""


@dataclass(frozen=True)
class TuneStep:
    child: DirectChild | None  # None when no trial beat the parent
    record: dict[str, Any]  # the ``tune`` event's payload (the engine adds the child's id)


class TuneOperator(LoopHook):
    """A loop hook that takes a proposal slot when a tune step is due."""

    name = "tune"

    def __init__(self, settings: TraceFeedbackConfig, recorder: Recorder, evaluate: Evaluate, *,
                 language: str, objective: Objective, seed: int, work_root: Path,
                 stop: Callable[[], str | None] = lambda: None,
                 record_child: RecordChild | None = None) -> None:
        """``evaluate(source, work_dir)`` runs one trial in a scratch folder it removes;
        ``record_child(generation, child)`` stores a child as pending and returns its id (the
        LLM-free child path); ``stop()`` names a budget cap that ends a step."""
        self.settings = settings
        self.recorder = recorder
        self.store = recorder.store
        self.evaluate = evaluate
        self.language = language
        self.objective = objective
        self.seed = seed
        self.work_root = work_root
        self.stop = stop
        self.record_child = record_child
        self.running = False
        self.steps = 0
        self.tuned: set[int] = set()
        self.committed_trials = 0  # evaluations spent by finished steps
        self.running_trials = 0  # ...and by the step under way
        for event in self.store.events.of_type(TuneStepped):
            self._remember(event.payload())

    def evaluations_spent(self) -> int:
        return self.trials

    async def take_slot(self, slot: SlotContext) -> SlotTaken | None:
        """A tune step when one is due and enough of the budget is left; None (an ordinary
        proposal follows) when it is not, or when no trial beat the parent."""
        if slot.allowance < MIN_TUNE_TRIALS or not self.step_due(slot.children_evaluated):
            return None
        child_id = await self.run(slot.generation, slot.programs, slot.children_evaluated,
                                  slot.allowance)
        return SlotTaken(child_id) if child_id is not None else None

    @property
    def trials(self) -> int:
        """Evaluations tuning has spent: they count against ``evolution.generations`` like
        children do, so runs with and without the operator spend equal evaluation budgets."""
        return self.committed_trials + self.running_trials

    def _remember(self, record: Mapping[str, Any]) -> None:
        self.steps += 1
        self.tuned.add(int(record["parent_id"]))
        self.committed_trials += int(record.get("trials", 0))

    def step_due(self, evaluated: int) -> bool:
        """Whether a tune step is due after ``evaluated`` evaluated children."""
        return (not self.running and self.language in TUNABLE_LANGUAGES
                and evaluated >= self.settings.tune_every * (self.steps + 1))

    def choose(self, programs: Mapping[int, ProgramRecord]) -> ProgramRecord | None:
        """The best correct program not tuned before (the earliest among equals)."""
        fresh = [p for p in programs.values()
                 if p.correct and p.fitness is not None and p.id not in self.tuned]
        return max(fresh, key=lambda p: (p.fitness, -p.id), default=None)

    async def run(self, generation: int, programs: Mapping[int, ProgramRecord],
                  evaluated: int, allowance: int | None = None) -> int | None:
        """One tune step as generation ``generation``, of at most ``allowance`` trials: the
        tuned child's id, recorded in one transaction with the step's ``tune`` event; None when
        nothing was tuned or improved."""
        step = await self.tune(programs, evaluated, allowance)
        if step is None:
            return None
        with self.recorder.transaction():
            child_id = (self.record_child(generation, step.child)
                        if step.child is not None and self.record_child is not None else None)
            names = {f.name for f in fields(TuneStepped)}
            self.recorder.emit(TuneStepped(**{k: v for k, v in step.record.items() if k in names},
                                           child_id=child_id))
        return child_id

    async def tune(self, programs: Mapping[int, ProgramRecord], evaluated: int,
                   allowance: int | None = None) -> TuneStep | None:
        """Tune the chosen parent; None when there is nothing to tune or a budget cap stopped
        the step (nothing is recorded then, so the step stays due)."""
        parent = self.choose(programs)
        if parent is None:
            return None
        row = self.store.candidates.get(parent.id)
        if row.source is None or row.score is None:
            return None
        self.running = True
        trials = 0

        async def score(source: str) -> float | None:
            nonlocal trials
            if self.stop() is not None:
                raise _Stopped
            trials += 1
            self.running_trials = trials
            work_dir = self.work_root / f"tune-{parent.id}-{trials}"
            return score_of(await self.evaluate(source, work_dir))

        try:
            budget = self.settings.tune_budget
            if allowance is not None:  # one evaluation goes to the program at its defaults
                budget = min(budget, allowance - 1)
            result = await tune_program(
                row.source, self.language, score, objective=self.objective, budget=budget,
                rng_seed=self.seed * 1_000_003 + parent.id, original_score=row.score,
                initial_random=1, local_first=True)
        except _Stopped:
            return None
        except Exception as exc:  # a broken step must not end the run: recorded, not retried
            log.warning("tune step on program %s failed: %s", parent.id, exc)
            record = self._record(parent.id, row.score, None, trials, evaluated)
            record["stopped"] = f"the step failed: {type(exc).__name__}: {exc}"
            self._remember(record)
            return TuneStep(None, record)
        finally:
            self.running = False
            self.running_trials = 0
        record = self._record(parent.id, row.score, result, trials, evaluated)
        child = self._child(parent.id, row.source, result, record)
        self._remember(record)
        return TuneStep(child, record)

    def _record(self, parent_id: int, parent_score: float, result: TuningResult | None,
                trials: int, evaluated: int) -> dict[str, Any]:
        if result is None:
            result = TuningResult(best_source="", best_score=None, best_values={}, knobs=[],
                                  history=[], original_score=parent_score,
                                  objective=self.objective)
        return {
            "parent_id": parent_id, "evaluated": evaluated, "trials": trials,
            "parent_score": parent_score,
            "tuned_score": result.best_score if result.improved else None,
            "improved": result.improved, "stopped": result.stopped,
            "knobs": [{"name": k.name, "literal": k.source_literal, "low": k.low,
                       "high": k.high, "scale": k.scale, "kind": k.kind} for k in result.knobs],
            "values": result.best_values if result.improved else {},
            "defaults_match": result.defaults_match,
            "curve": [step.score for step in result.history],
        }

    def _child(self, parent_id: int, source: str, result: TuningResult,
               record: dict[str, Any]) -> DirectChild | None:
        if not result.improved or result.best_source == source:
            return None
        try:  # knobs are EVOLVE-BLOCK literals, so this holds; checked like every patch
            check_immutable_unchanged(source, result.best_source)
        except BlockError:
            return None
        values = ", ".join(f"{name}={value:.6g}" for name, value in result.best_values.items())
        return DirectChild(
            parent_id=parent_id, source=result.best_source, operator="tune",
            description=(f"Bayesian optimisation of {len(result.knobs)} numeric knob(s) over "
                         f"{record['trials']} evaluations: {values} (score "
                         f"{record['parent_score']:.6g} -> {result.best_score:.6g})"),
            notes={"tuning": {k: v for k, v in record.items() if k != "parent_id"}},
        )


def build_tune_operator(settings: TraceFeedbackConfig, recorder: Recorder, evaluate: Evaluate,
                        **options: Any) -> TuneOperator | None:
    return (TuneOperator(settings, recorder, evaluate, **options) if settings.tune_operator
            else None)
