"""The tuning gap (seed 001 §5.4, B.9): hold a program's structure fixed, tune only its numeric
knobs with Bayesian optimisation through the task's own evaluator, and compare the ceiling with
the program's score and the run's best.

:func:`tune_program` is the engine-facing operator (the search's ``tune`` mutation,
``cambrian/search/tune_step.py``, calls it with the run's own evaluator): it takes any
``evaluate(source) -> score or None`` coroutine. Its budget counts the search evaluations
(default 24: 8 random points, then 16 expected-improvement acquisitions); one more evaluation
checks that the rewritten program at the knobs' defaults scores like the original, and one more
scores the original itself unless ``original_score`` is given. :func:`tune_run` does the same
for a candidate of a stored run and writes ``<run>/trace/tuning.json`` for the report.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.llm.base import LLMProvider
from cambrian.task.knobs import Knob, find_knobs
from cambrian.trace.bayes_opt import Dimension, GaussianProcessSearch, local_rings
from cambrian.trace.extras import TUNING_FILE, extras_dir, write_json
from cambrian.trace.knob_llm import propose_knobs
from cambrian.trace.loading import load_trace
from cambrian.trace.param_rewrite import parameterise, substitute
from cambrian.trace.run_evaluation import RunEvaluator

DEFAULT_BUDGET = 24
INITIAL_RANDOM = 8

Evaluate = Callable[[str], Awaitable["float | None"]]


@dataclass(frozen=True)
class TuningStep:
    index: int  # 0 is the rewritten program at the defaults
    phase: str  # "defaults" | "local" | "random" | "gp"
    values: dict[str, float]
    score: float | None


@dataclass
class TuningResult:
    best_source: str  # the original layout with the best values written into the literals
    best_score: float | None
    best_values: dict[str, float]
    knobs: list[Knob]
    history: list[TuningStep]
    original_score: float | None
    objective: Objective
    default_score: float | None = None  # the rewritten program at the defaults
    defaults_match: bool | None = None  # None when there was nothing to check
    parameterised_source: str = ""  # PARAMS / #define form, at the best values
    dropped_knobs: dict[str, str] = field(default_factory=dict)
    stopped: str = ""  # why tuning ended before searching, if it did

    @property
    def improved(self) -> bool:
        return self.objective.better(self.best_score, self.original_score)

    def to_dict(self) -> dict[str, Any]:
        # Serialised as before: a "maximize" flag where the objective sits.
        data = {("maximize" if key == "objective" else key): value
                for key, value in asdict(self).items()}
        data["maximize"] = self.objective.maximize
        data["improved"] = self.improved
        return data


def _same_score(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


async def tune_program(
    source: str,
    language: str,
    evaluate: Evaluate,
    *,
    objective: Objective,
    budget: int = DEFAULT_BUDGET,
    rng_seed: int = 0,
    knobs: Sequence[Knob] | None = None,
    original_score: float | None = None,
    initial_random: int = INITIAL_RANDOM,
    local_first: bool = False,
) -> TuningResult:
    """Tune ``source``'s knobs (found deterministically when ``knobs`` is None). With
    ``local_first`` the first trials are one-knob steps around the current values, 10% and then
    25% of each value (:func:`local_rings`), then ``initial_random`` random points, then GP
    acquisitions; the local steps leave at least one trial to the GP."""
    chosen = list(knobs) if knobs is not None else find_knobs(source, language)
    if original_score is None:
        original_score = await evaluate(source)
    result = TuningResult(best_source=source, best_score=original_score, best_values={},
                          knobs=[], history=[], original_score=original_score,
                          objective=objective, parameterised_source=source)
    if not chosen:
        result.stopped = "no tunable knobs"
        return result
    try:
        program = parameterise(source, language, chosen)
    except (SyntaxError, ValueError) as exc:
        result.stopped = f"the program cannot be rewritten: {exc}"
        return result
    result.knobs, result.dropped_knobs = list(program.knobs), dict(program.dropped)
    if not program.knobs:
        result.stopped = "no knob could be located in the program"
        return result
    defaults = program.defaults()
    result.best_values = dict(defaults)
    result.parameterised_source = program.render(defaults)
    result.default_score = await evaluate(result.parameterised_source)
    result.defaults_match = _same_score(result.default_score, original_score)
    result.history.append(TuningStep(0, "defaults", dict(defaults), result.default_score))
    if result.default_score is None and original_score is not None:
        result.stopped = "the rewritten program fails at the default values"
        return result

    names = [k.name for k in program.knobs]
    dimensions = [Dimension(k.low, k.high, k.scale, k.kind == "int") for k in program.knobs]
    start = (local_rings(dimensions, [defaults[n] for n in names])[
        :max(0, budget - min(initial_random, budget) - 1)] if local_first else [])
    search = GaussianProcessSearch(dimensions, objective=objective, rng_seed=rng_seed,
                                   initial_random=min(initial_random, budget), start=start)
    search.tell([defaults[n] for n in names], result.default_score)
    for index in range(1, budget + 1):
        point = search.ask()
        phase = "local" if search.last_phase == "start" else search.last_phase
        values = dict(zip(names, point, strict=True))
        score = await evaluate(program.render(values))
        search.tell(point, score)
        result.history.append(TuningStep(index, phase, values, score))

    best = None
    for step in result.history[1:]:
        if objective.better(step.score, best.score if best is not None else None):
            best = step
    reference = original_score if original_score is not None else result.default_score
    if best is not None and objective.better(best.score, reference):
        result.best_score, result.best_values = best.score, dict(best.values)
        result.best_source = substitute(source, language, program.knobs, best.values)
        result.parameterised_source = program.render(best.values)
    return result


# ---------------------------------------------------------------------------- a stored run


async def tune_run(run_dir: str | Path, *, candidate_id: str | None = None,
                   budget: int = DEFAULT_BUDGET, rng_seed: int = 0,
                   knob_provider: LLMProvider | None = None,
                   use_grammar: bool = False) -> tuple[TuningResult, dict[str, Any], Path]:
    """Tune one candidate of a run (default: the run's best) and write ``tuning.json``.

    With ``knob_provider`` the knobs come from one LLM call (B.9); when that call fails or no
    proposal survives validation, the deterministic finder is used instead."""
    trace = load_trace(run_dir)
    run_best = trace.best()
    if candidate_id is not None and not trace.has(candidate_id):
        raise ValueError(f"no candidate {candidate_id} in this run")
    target = trace.candidate(candidate_id) if candidate_id is not None else run_best
    if target is None or target.source is None or not target.evaluated:
        raise ValueError("no evaluated candidate to tune"
                         + (f" (candidate {candidate_id})" if candidate_id else ""))
    with RunEvaluator(run_dir) as evaluator:
        knobs: list[Knob] | None = None
        knob_source = "deterministic"
        rejected: dict[str, str] = {}
        if knob_provider is not None:
            proposals = await propose_knobs(knob_provider, target.source, evaluator.language,
                                            use_grammar=use_grammar)
            rejected = proposals.rejected
            if proposals.knobs:
                knobs, knob_source = proposals.knobs, f"llm:{knob_provider.model}"
            else:
                knob_source = ("deterministic (the LLM proposed no usable knob"
                               + (f": {proposals.error}" if proposals.error else "") + ")")
        result = await tune_program(
            target.source, evaluator.language, evaluator.score, objective=evaluator.objective,
            budget=budget, rng_seed=rng_seed, knobs=knobs,
            original_score=target.score if target.status is CandidateStatus.CORRECT else None)
    document = {
        "candidate_id": target.id,
        "program_score": result.original_score,
        "tuned_score": result.best_score,
        "run_best": run_best.score if run_best else None,
        "run_best_id": run_best.id if run_best else None,
        "direction": result.objective.direction,
        "improved": result.improved,
        "reaches_run_best": (result.best_score is not None and run_best is not None
                             and run_best.score is not None
                             and not result.objective.better(run_best.score, result.best_score)),
        "curve": [step.score for step in result.history],
        "default_score": result.default_score,
        "defaults_match": result.defaults_match,
        "knob_source": knob_source,
        "knobs": [k.to_dict() for k in result.knobs],
        "rejected_proposals": rejected,
        "dropped_knobs": result.dropped_knobs,
        "best_values": result.best_values,
        "budget": budget,
        "stopped": result.stopped,
    }
    folder = extras_dir(trace.origin or Path(run_dir))
    suffix = Path(trace.run.program_filename or "program.txt").suffix or ".txt"
    (folder / f"tuned-{target.id}{suffix}").parent.mkdir(parents=True, exist_ok=True)
    (folder / f"tuned-{target.id}{suffix}").write_text(result.best_source, encoding="utf-8")
    return result, document, write_json(folder / TUNING_FILE, document)
