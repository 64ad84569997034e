"""Tiered evaluation (seed 002 §10.7 "Fast Evaluation", seed 004 §10.7 "Tiered Evaluation").

Stages:  quick  -- the first K public cases;
         full   -- the rest of the public cases (quick-stage results are reused, not rerun),
                   only when the quick score passes the threshold against the current best;
         remote -- the expensive remote scorer, only when the full score beats the current best.

Quick threshold (scale-free, direction-aware): with B the current best's quick-stage score and
q the candidate's, the candidate is promoted when it is at most (1 - quick_threshold)·|B| worse
than B. For a positive maximised score that is q >= quick_threshold·B; for a minimised one,
q <= (2 - quick_threshold)·B. It is invariant to rescaling scores. With no best yet, or no
quick score on record for it, every candidate is promoted.

Screened candidates (stopped after the quick stage) have no score on the full public set, and
none is invented for them. Their result keeps status "ok" (the cases that ran were accepted),
`combined_score` None, `extra["screened"] = True`, `extra["promoted"] = False` and the real
quick-stage score in `extra["quick_score"]` (and in the stored "quick" stage row). The engine
commits them with candidate status "screened": counted as evaluated (a generation was spent),
never as correct, never the best, and given to the selector as a program without a fitness.
Why not an estimated fitness in the archive: a quick-stage mean is over different (fewer) cases
than every archived fitness, so any number derived from it either outranks full-set scores or
is made up to sit below them; every selector already handles programs without a fitness, and a
program judged not worth a full evaluation is not one the search should build on either.

The reference is supplied by the engine as `best_reference() -> {"quick", "full", "remote"} |
None`; `reference_from_store` computes it from a run store holding one evaluations row per stage
(see `stage_results`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cambrian.config.judge import TierConfig
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.objective import Objective
from cambrian.evaluate.judge.cases import CaseGenerationError
from cambrian.evaluate.judge.evaluator import CaseBatch, JudgedEvaluator
from cambrian.evaluate.judge.remote import RemoteScorer
from cambrian.evaluate.judge.toolchains import CompilerUnavailable

ReferenceProvider = Callable[[], Mapping[str, float] | None]
STAGE_QUICK = "quick"
STAGE_FULL = "full"
STAGE_REMOTE = "remote"


# --------------------------------------------------------------------------- the rules


def relative_shortfall(score: float, reference: float, objective: Objective) -> float:
    """How much worse `score` is than `reference`, as a fraction of |reference| (0 if not worse)."""
    worse_by = objective.gain(reference, score)
    if worse_by <= 0:
        return 0.0
    return math.inf if reference == 0 else worse_by / abs(reference)


def passes_quick(
    score: float, reference: float | None, threshold: float, objective: Objective
) -> bool:
    if reference is None:
        return True
    # The tolerance keeps "exactly 90% of the best" on the passing side despite rounding.
    return relative_shortfall(score, reference, objective) <= (1.0 - threshold) + 1e-9


def is_screened(result: EvaluationResult) -> bool:
    """A candidate stopped after the quick stage: correct so far, but with no full-set score."""
    return result.extra.get("screened") is True


def evaluation_warnings(result: EvaluationResult) -> list[tuple[str, dict[str, Any]]]:
    """(event kind, payload) for problems of the judging infrastructure rather than of the
    program, which the run should record and show the person running it."""
    error = result.extra.get("remote_error")
    return [("remote_scorer_down", {"error": str(error)})] if error else []


# --------------------------------------------------------------------------- stage records


def _stage_record(stage: str, result: EvaluationResult, n_cases: int, **more: Any) -> dict:
    return {
        "stage": stage,
        "status": result.status,
        "combined_score": result.combined_score,
        "duration_s": round(result.duration_s, 4),
        "n_cases": n_cases,
        "public": dict(result.public),
        "text_feedback": result.text_feedback,
        "error": result.error,
        "cases": list(result.extra.get("cases", [])),
        **more,
    }


def stage_results(result: EvaluationResult) -> list[tuple[str, EvaluationResult]]:
    """One (stage name, EvaluationResult) per stage that ran, for one evaluations row each."""
    rows = []
    for record in result.extra.get("stages", []):
        extra = {k: v for k, v in record.items()
                 if k not in ("stage", "status", "combined_score", "duration_s", "public",
                              "text_feedback", "error")}
        rows.append((record["stage"], EvaluationResult(
            status=record["status"], combined_score=record["combined_score"],
            public=dict(record["public"]), text_feedback=record["text_feedback"],
            error=record["error"], duration_s=record["duration_s"], extra=extra,
        )))
    return rows


def reference_from_store(store: Any, objective: Objective) -> dict[str, float] | None:
    """The engine's `best_reference()` from a cambrian Store with per-stage evaluation rows.

    Only candidates whose status is 'correct' count (screened ones never do); the best is the
    one with the best full-stage score.
    """
    rows = store.evaluations.correct_stage_scores((STAGE_QUICK, STAGE_FULL, STAGE_REMOTE))
    per_candidate: dict[int, dict[str, float]] = {}
    for candidate_id, stage, score in rows:
        per_candidate.setdefault(int(candidate_id), {})[stage] = float(score)
    full = {cid: stages for cid, stages in per_candidate.items() if STAGE_FULL in stages}
    if not full:
        return None
    best = max(full.values(), key=lambda stages: objective.fitness(stages[STAGE_FULL]))
    reference = {STAGE_FULL: best[STAGE_FULL]}
    for stage in (STAGE_QUICK, STAGE_REMOTE):
        if stage in best:
            reference[stage] = best[stage]
    return reference


# --------------------------------------------------------------------------- the evaluator


class TieredEvaluator:
    """Same public method as ProgramEvaluator; stages are listed in `extra["stages"]`."""

    def __init__(
        self,
        judge: JudgedEvaluator,
        best_reference: ReferenceProvider,
        *,
        tiers: TierConfig | None = None,
        remote: RemoteScorer | None = None,
    ) -> None:
        self.judge = judge
        self.best_reference = best_reference
        self.tiers = tiers
        self.remote = remote
        self.objective = judge.task.objective

    async def close(self) -> None:
        await self.judge.close()

    async def prepare(self) -> None:
        """Generate the public cases up front (fails fast on a broken generator)."""
        await self.judge.prepare()

    def _reference(self, key: str) -> float | None:
        reference = self.best_reference() or {}
        value = reference.get(key)
        return float(value) if value is not None else None

    async def evaluate(self, source: str, work_dir: Path) -> EvaluationResult:
        started = time.monotonic()
        work_dir = Path(work_dir).resolve()
        work_dir.mkdir(parents=True, exist_ok=True)
        suffix = self.judge.source_suffix
        (work_dir / f"program{suffix}").write_text(source, encoding="utf-8")
        try:
            return await self._stages(source, work_dir, started)
        except (CaseGenerationError, CompilerUnavailable) as error:
            return EvaluationResult(status="crashed", error=f"judge setup failed: {error}",
                                    duration_s=time.monotonic() - started)

    async def _stages(self, source: str, work_dir: Path, started: float) -> EvaluationResult:
        judge = self.judge
        public = judge.public_cases
        keep_outputs = self.remote is not None and self.remote.config.send == "outputs"
        quick_n = self.tiers.quick_cases if self.tiers else 0
        quick_n = quick_n if quick_n < len(public) else 0
        first_stage = STAGE_QUICK if quick_n else STAGE_FULL
        stages: list[dict] = []

        compiled = await judge.compile(source)
        if not compiled.ok:
            failed = judge.compile_error_result(compiled)
            stages.append(_stage_record(first_stage, failed, 0))
            return self._finish(failed, stages, first_stage, promoted=False, started=started)

        done = CaseBatch(results=[])
        if quick_n:
            done = await judge.run_cases(compiled, public[:quick_n], work_dir,
                                         keep_outputs=keep_outputs)
            quick = judge.batch_result(compiled, done, set_label="public (quick stage)",
                                       planned=quick_n, duration_s=time.monotonic() - started)
            if not quick.correct or quick.combined_score is None:
                stages.append(_stage_record(STAGE_QUICK, quick, quick_n))
                return self._finish(quick, stages, STAGE_QUICK, promoted=False, started=started)
            assert self.tiers is not None
            reference = self._reference(STAGE_QUICK)
            passed = passes_quick(quick.combined_score, reference, self.tiers.quick_threshold,
                                  self.objective)
            stages.append(_stage_record(STAGE_QUICK, quick, quick_n, passed=passed,
                                        reference=reference,
                                        threshold=self.tiers.quick_threshold))
            if not passed:
                assert reference is not None
                return self._screened(quick, reference, len(public) - quick_n, stages, started)

        rest = await judge.run_cases(compiled, public[quick_n:], work_dir,
                                     keep_outputs=keep_outputs)
        merged = CaseBatch(results=done.results + rest.results, skipped=rest.skipped,
                           outputs={**done.outputs, **rest.outputs})
        full = judge.batch_result(compiled, merged, set_label="public", planned=len(public),
                                  duration_s=time.monotonic() - started)
        stages.append(_stage_record(STAGE_FULL, full, len(public)))
        if not full.correct or full.combined_score is None or self.remote is None:
            return self._finish(full, stages, STAGE_FULL, promoted=full.correct, started=started)
        if not self.objective.better(full.combined_score, self._reference(STAGE_FULL)):
            return self._finish(full, stages, STAGE_FULL, promoted=True, started=started)

        remote = await self.remote.evaluate_stage(source, merged.outputs)
        stages.append(_stage_record(STAGE_REMOTE, remote, 0, **remote.extra))
        if remote.status == "ok":
            full.public["remote_score"] = remote.combined_score
            full.text_feedback += "\n" + remote.text_feedback
        elif remote.status == "incorrect":
            full.status = "incorrect"
            full.error = remote.error
            full.text_feedback += "\n" + remote.error
        else:  # the server, not the program, failed: keep the local verdict
            full.extra["remote_error"] = remote.error
        return self._finish(full, stages, STAGE_REMOTE, promoted=True, started=started)

    def _screened(
        self,
        quick: EvaluationResult,
        reference_quick: float,
        not_run: int,
        stages: list[dict],
        started: float,
    ) -> EvaluationResult:
        """The quick stage's own result, marked screened, with no full-set score."""
        assert quick.combined_score is not None and self.tiers is not None
        percent = round(self.tiers.quick_threshold * 100)
        quick.text_feedback += (
            f"\nScreened out at the quick stage: {quick.combined_score:.6g} on the first "
            f"{self.tiers.quick_cases} public cases is not within {percent}% of the current "
            f"best's {reference_quick:.6g} there, so the other {not_run} public cases were not "
            "run and the program has no full public score."
        )
        quick.extra["quick_score"] = quick.combined_score
        quick.extra["screened"] = True
        quick.combined_score = None
        return self._finish(quick, stages, STAGE_QUICK, promoted=False, started=started)

    @staticmethod
    def _finish(
        result: EvaluationResult,
        stages: list[dict],
        final_stage: str,
        *,
        promoted: bool,
        started: float,
    ) -> EvaluationResult:
        result.extra["stages"] = stages
        result.extra["final_stage"] = final_stage
        result.extra["promoted"] = promoted
        result.duration_s = time.monotonic() - started
        return result
