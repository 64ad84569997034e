"""A loop hook that checks a model-written improvement-step score against the evaluator before
the child that wrote it is evaluated (``mutate/step/score_check.py`` builds the variants and
judges them). A refused child is screened out with the reason (status ``rejected``, shown by
``cambrian status`` among the failures); every check is a ``step_score_check`` event. A score
is checked once per run: a later child carrying the same text gets the same verdict. The
variants' evaluations are not programs of the run and do not count towards its generations.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from cambrian.core.events import StepScoreChecked
from cambrian.core.hooks import LoopHook
from cambrian.core.objective import Objective
from cambrian.mutate.step.score_check import (
    SolutionPart,
    judge,
    reported_error,
    reported_parts,
    reported_score,
    score_text,
    variant_sources,
    written_score,
)
from cambrian.mutate.step.wiring import InitialEntry
from cambrian.store.recorder import Recorder

Trial = Callable[[str, Path], Awaitable[Any]]  # (source, work dir) -> EvaluationResult


class StepScoreCheck(LoopHook):
    name = "step_score_check"

    def __init__(self, recorder: Recorder, trial: Trial, *, language: str, count: int,
                 objective: Objective, given_score: str | None = None) -> None:
        self.recorder = recorder
        self.trial = trial
        self.language = language
        self.count = count
        self.objective = objective
        self.given_score = given_score
        self.step_entry = InitialEntry(recorder.store, language)
        self.verdicts: dict[str, asyncio.Future[tuple[bool, str]]] = {}

    async def screen(self, source: str, parent_id: int | None, work_dir: Path) -> str | None:
        parent = (self.recorder.store.candidates.get(parent_id).source
                  if parent_id is not None else None)
        wired = written_score(source, parent, self.language, self.given_score,
                              self.step_entry())
        if wired is None:
            return None
        key = score_text(wired)
        if key not in self.verdicts:  # children evaluated side by side share one check
            self.verdicts[key] = asyncio.ensure_future(self._check(wired, work_dir))
        accepted, reason = await self.verdicts[key]
        return None if accepted else f"improvement-step score refused: {reason}"

    async def _check(self, wired: Any, work_dir: Path) -> tuple[bool, str]:
        evaluator: list[float | None] = []
        model: list[float | None] = []
        parts: list[SolutionPart] = []
        errors: list[str] = []
        try:
            variants = variant_sources(wired, self.count)
        except Exception as error:  # a child the variants cannot be built from: evaluate it
            return True, f"unchecked: no variant could be built ({error})"
        for index, variant in enumerate(variants):
            result = await self.trial(variant, work_dir.with_name(
                f"{work_dir.name}-score{index}"))
            valid = result.correct and result.combined_score is not None
            evaluator.append(self.objective.fitness(result.combined_score) if valid else None)
            model.append(reported_score(result.stderr))
            errors.append(reported_error(result.stderr))
            parts = parts or reported_parts(result.stderr)
        verdict = judge(evaluator, model, every_part_changed=self.count >= len(wired.solution),
                        errors=errors)
        self.recorder.emit(StepScoreChecked(
            candidate_id=int(work_dir.name) if work_dir.name.isdigit() else None,
            accepted=verdict.accepted, reason=verdict.reason, evaluator=evaluator,
            model=[None if m is None or math.isnan(m) else m for m in model],
            evaluator_ignores_solution=verdict.ignores_solution,
            solution_parts=[part.kind for part in parts],
            solution_shapes=[part.description for part in parts]))
        return verdict.accepted, verdict.reason

    def restore(self) -> None:
        """Verdicts of earlier sessions are not kept: a resumed run checks a score again."""
        self.verdicts.clear()
