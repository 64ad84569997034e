"""What an evaluation produces, whatever contract the task's evaluator follows; stored as is."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

EvalStatus = Literal[
    "ok",  # evaluator ran and judged the program correct; combined_score is set
    "incorrect",  # evaluator ran and judged the program incorrect (correct=False)
    "timeout",  # wall-clock limit hit; the whole process group was killed
    "memory",  # memory limit hit
    "disk",  # disk limit hit (what it wrote into its scratch folder); killed, the folder emptied
    "crashed",  # evaluator or program exited abnormally / raised
    "invalid_output",  # evaluator finished but its results were missing or malformed
]


@dataclass
class EvaluationResult:
    status: EvalStatus
    combined_score: float | None = None
    public: dict[str, Any] = field(default_factory=dict)
    # Never shown to an LLM: kept for held-out analysis (seed 001 B.7).
    private: dict[str, Any] = field(default_factory=dict)
    text_feedback: str = ""
    error: str = ""
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    # Free-form extras an evaluator returns (per-test-case results, artifacts...).
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_finite_number(value: Any) -> bool:
    """A number a float holds (not NaN, inf, or an integer beyond a float's range)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def case_scores(result: EvaluationResult) -> dict[str, float]:
    """Per-test-case scores an evaluator reported (``extra["cases"]``), keyed by case id."""
    return scores_of_cases(result.extra.get("cases"))


def scores_of_cases(cases: Any) -> dict[str, float]:
    """Per-test-case scores of an ``extra["cases"]`` list, keyed by case id."""
    scores: dict[str, float] = {}
    for index, case in enumerate(cases or []):
        if isinstance(case, dict) and isinstance(case.get("score"), (int, float)):
            key = str(case.get("case", case.get("id", index)))
            scores[key] = float(case["score"])
    return scores


def score_of(result: EvaluationResult) -> float | None:
    """The combined score of a correct result; None otherwise (what the search calls correct:
    the evaluator accepted the program and returned a score)."""
    return result.combined_score if result.correct and result.combined_score is not None else None
