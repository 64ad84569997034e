"""What a run does once, before its first proposal (seed 004 §4 "Phase 1"):

1. problem comprehension: the LLM's brief of the problem statement, written once per run and
   read back on resume, goes into the system message of every mutation prompt;
2. a first program, when the task folder has none: the LLM writes it, the task's evaluation
   checks it, and it is committed as candidate 1 with that evaluation.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING

from cambrian.config import ConfigError
from cambrian.evaluate.result import EvaluationResult
from cambrian.meta.comprehension import ProblemComprehension, prompt_brief
from cambrian.mutate.first_program import FirstProgramError, FirstProgramWriter
from cambrian.search.hooks import Assistant

if TYPE_CHECKING:
    from cambrian.search.engine import Evolution


def _assistant(evolution: Evolution, label: str | None, setting: str) -> Assistant:
    labels = [m.label for m in evolution.config.llm.models]
    if label is not None and label not in labels:
        raise ConfigError(f"{setting} '{label}' is not one of llm.models: {labels}")
    return evolution._assistant(label)


def _has_initial_candidate(evolution: Evolution) -> bool:
    row = evolution.store.execute("SELECT 1 FROM candidates WHERE id=1").fetchone()
    return row is not None


async def prepare_run(evolution: Evolution) -> None:
    """Set the problem brief on the prompt builder; write the first program when there is none."""
    config = evolution.config

    def budget_stop() -> str | None:
        return evolution.budget.stop_reason(0)

    comprehension = ProblemComprehension(
        config.comprehension, evolution.task, evolution.store,
        _assistant(evolution, config.comprehension.model, "comprehension.model"),
        evolution.run_dir, budget_check=budget_stop,
    )
    brief = await comprehension.brief()
    evolution.proposer.prompts.brief = prompt_brief(brief, config.comprehension.max_prompt_chars)
    if not _has_initial_candidate(evolution):
        await _write_first_program(evolution, brief, budget_stop)


async def _write_first_program(
    evolution: Evolution, brief: str | None, budget_stop: Callable[[], str | None]
) -> None:
    from cambrian.search.engine import RunAborted

    store, task = evolution.store, evolution.task
    assistant = _assistant(evolution, evolution.config.first_program.model, "first_program.model")
    writer = FirstProgramWriter(evolution.config.first_program, task, store, assistant, budget_stop)

    async def evaluate(source: str, attempt: int) -> EvaluationResult:
        work_dir = evolution.run_dir / "work" / f"first-program-{attempt}"
        try:
            return await evolution.evaluator.evaluate(source, work_dir)
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)

    try:
        program = await writer.write(brief, evaluate)
    except FirstProgramError as exc:
        raise RunAborted(str(exc)) from None
    with store.transaction():
        candidate_id = store.add_candidate(
            generation=0, island=0, parent_id=None, operator="init", status="pending",
            language=task.language.name, source=program.source,
            description=program.description or "initial program written by the LLM",
            model=assistant.model_label, context_id=program.context_id,
            notes={"written_by_llm": True, "attempts": program.attempts,
                   "markers_added": program.markers_added},
        )
    # Its evaluation already ran as the check; commit that result rather than running it again.
    evolution._commit(store.candidate(candidate_id), program.result)
