"""Public-vs-private generalization of a run (seed 001 §5 and B.7, seed 000 §4.3).

Public scores drive the search and can overfit the public cases. This re-scores the run's
public best-so-far chain -- every evaluated candidate that improved on the best public score,
in the order evaluations finished -- on the held-out PRIVATE cases, and flags the steps whose
public gain did not carry over (private score not better than the previous step's).

Deltas are raw differences (score - previous score); "gain" is direction-aware (a decrease is
a gain for a minimised score).
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cambrian.config.judge import JudgeConfigError, parse_judge_config
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.judge.factory import build_judged_evaluator
from cambrian.store.rows import CandidateRow
from cambrian.store.store import Store

WORK_DIRNAME = "generalization"


@dataclass(frozen=True)
class GeneralizationStep:
    candidate_id: int
    generation: int
    public_score: float
    private_score: float | None  # None when the program failed on a private case
    private_status: str
    public_delta: float | None  # None for the first step
    private_delta: float | None
    overfit: bool  # public gain, no private gain (or a private failure)
    private_error: str = ""


@dataclass(frozen=True)
class GeneralizationReport:
    run_dir: Path
    task_name: str
    direction: str
    private_cases: int
    steps: list[GeneralizationStep] = field(default_factory=list)

    @property
    def overfit_steps(self) -> list[GeneralizationStep]:
        return [step for step in self.steps if step.overfit]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["run_dir"] = str(self.run_dir)
        return data


def _promoted(store: Store, candidate_id: int) -> bool:
    """False for candidates screened out at a tiered evaluation's quick stage."""
    result = store.evaluations.latest(candidate_id)
    return result is None or result.extra.get("promoted", True) is not False


def best_so_far_chain(store: Store, objective: Objective) -> list[CandidateRow]:
    """Correct candidates that improved on the best public score, in evaluation order."""
    # A candidate's rows (one per stage, then "main") are committed together: its first row
    # dates the commit, as in Store.evaluated_in_commit_order.
    chain: list[CandidateRow] = []
    best: float | None = None
    for candidate_id in store.evaluations.committed_order():
        row = store.candidates.get(candidate_id)
        if row.status is not CandidateStatus.CORRECT or row.score is None or row.source is None:
            continue
        if best is not None and objective.gain(row.score, best) <= 0:
            continue
        if not _promoted(store, row.id):
            continue
        chain.append(row)
        best = row.score
    return chain


def _step(
    row: CandidateRow,
    previous: GeneralizationStep | None,
    private_score: float | None,
    private_status: str,
    private_error: str,
    objective: Objective,
) -> GeneralizationStep:
    assert row.score is not None
    public_delta = private_delta = None
    overfit = False
    if previous is not None:
        public_delta = row.score - previous.public_score
        if private_score is not None and previous.private_score is not None:
            private_delta = private_score - previous.private_score
        public_gain = objective.gain(row.score, previous.public_score) > 0
        if private_score is None:  # passes every public case, fails a private one
            carried_over = False
        elif previous.private_score is None:  # fixed a private failure
            carried_over = True
        else:
            carried_over = objective.gain(private_score, previous.private_score) > 0
        overfit = public_gain and not carried_over
    return GeneralizationStep(
        candidate_id=row.id, generation=row.generation, public_score=row.score,
        private_score=private_score, private_status=private_status,
        public_delta=public_delta, private_delta=private_delta, overfit=overfit,
        private_error=private_error,
    )


async def generalization_report(
    run_dir: Path, *, judge_override: dict[str, Any] | None = None
) -> GeneralizationReport:
    """Re-score the run's public best-so-far chain on the private cases.

    `judge_override` replaces the stored `judge` section (e.g. to point at other private
    seeds); by default the run's own resolved config is used.
    """
    run_dir = Path(run_dir)
    store = Store.open(run_dir)
    try:
        info = store.runs.info()
        judge_section = judge_override or info.config.get("judge")
        if not judge_section:
            raise JudgeConfigError(
                f"{run_dir} is not a judged run: its config has no `judge` section"
            )
        judge = parse_judge_config(judge_section)
        direction = judge.resolved_direction(info.direction)
        objective = Objective.of(direction)
        evaluator = build_judged_evaluator(
            Path(info.task_dir), judge, run_dir=run_dir, task_direction=direction
        )
        if not evaluator.task.private:
            raise JudgeConfigError("the judge section declares no private cases "
                                   "(private_seeds or private_cases)")
        chain = best_so_far_chain(store, objective)
    finally:
        store.close()

    steps: list[GeneralizationStep] = []
    work_root = run_dir / WORK_DIRNAME
    try:
        for row in chain:
            assert row.source is not None
            result = await evaluator.evaluate_private(row.source, work_root / str(row.id))
            score = result.combined_score if result.correct else None
            error = "" if result.correct else str(result.private.get("error") or result.error)
            steps.append(_step(row, steps[-1] if steps else None, score, result.status, error,
                               objective))
    finally:
        await evaluator.close()
        shutil.rmtree(work_root, ignore_errors=True)
    return GeneralizationReport(
        run_dir=run_dir, task_name=info.task_name, direction=direction,
        private_cases=len(evaluator.task.private), steps=steps,
    )
