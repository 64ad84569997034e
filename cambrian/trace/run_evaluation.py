"""The evaluator a Cambrian run used, rebuilt from its store, for analyses that execute programs
again (tuning ceiling, replay stability): same task folder, same configuration, same limits.

A candidate counts as successful exactly when the search would have called it correct: the
evaluator accepted it and returned a combined score (:func:`cambrian.core.evaluation.score_of`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Self

from cambrian.config import RunConfig, build_config
from cambrian.core.evaluation import EvaluationResult, score_of
from cambrian.core.objective import Objective
from cambrian.evaluate.factory import build_evaluator
from cambrian.store.store import Store
from cambrian.task.folder import Task, load_task

__all__ = ["RunEvaluator", "score_of"]


class RunEvaluator:
    """Open with ``RunEvaluator(run_dir)`` (or as a context manager); ``close()`` when done."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.store = Store.open(self.run_dir)
        try:
            info = self.store.runs.info()
            self.config: RunConfig = build_config([info.config])
            self.task: Task = load_task(Path(info.task_dir), self.config)
            self._evaluator: Any = build_evaluator(self.task, self.config, self.run_dir,
                                                   self.store)
        except BaseException:
            self.store.close()
            raise

    @property
    def objective(self) -> Objective:
        return Objective.of(self.task.direction)

    @property
    def language(self) -> str:
        return self.task.language.name

    async def evaluate(self, source: str) -> EvaluationResult:
        """Run the task's evaluator on ``source`` in a scratch folder that is removed after."""
        with tempfile.TemporaryDirectory(prefix="cambrian-trace-eval-") as scratch:
            return await self._evaluator.evaluate(source, Path(scratch))

    async def score(self, source: str) -> float | None:
        """The combined score, or None when the program is not correct."""
        return score_of(await self.evaluate(source))

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
