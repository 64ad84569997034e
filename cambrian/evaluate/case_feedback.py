"""Per-example results an evaluator reports beside its score (``cases``): GEPA-style feedback.

An evaluator of a prompt, a classifier or any task scored on examples may return, in its dict
(module contract) or ``metrics.json`` (command contract), ``"cases"``: a list with one object
per example, holding any of

* ``input``: what the example gave (a sentence, an instance's name);
* ``expected``: the right answer;
* ``output``: what the candidate answered;
* ``correct``: whether it got the example right (an example with ``correct: false`` failed);
* ``feedback``: why it is wrong, or any other remark on it (GEPA's per-example feedback);
* ``score``: the example's own score.

They are kept in ``extra["cases"]`` (each value cut to MAX_FIELD_CHARS, at most MAX_CASES), a
one-line count goes into the text feedback, and the mutation prompt shows the failed ones in a
section of their own with an instruction to reflect on them before changing anything
(``mutate/reflection.py``). A malformed list never costs the candidate its score: it is left
out, and the text feedback says why.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

MAX_CASES = 200
MAX_FIELD_CHARS = 500
MAX_CASES_CHARS = 100_000  # all kept cases together, as JSON (under the store's cap on extras)
TEXT_FIELDS = ("id", "input", "expected", "output", "feedback")
CASES_KEY = "cases"


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    return text if len(text) <= MAX_FIELD_CHARS else text[: MAX_FIELD_CHARS - 1] + "…"


def _correct(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and math.isfinite(value):
        return bool(value)
    return None


def _case(item: dict[str, Any]) -> dict[str, Any]:
    case: dict[str, Any] = {key: _text(item[key]) for key in TEXT_FIELDS
                            if item.get(key) is not None}
    correct = _correct(item.get("correct"))
    if correct is not None:
        case["correct"] = correct
    score = item.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score):
        case["score"] = float(score)
    return case


def read_cases(value: Any, where: str) -> tuple[list[dict[str, Any]], str]:
    """(the cases as stored, the line the text feedback gets); ([], "") without cases."""
    if value is None:
        return [], ""
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        shown = type(value).__name__ if not isinstance(value, list) else "a list of other things"
        return [], (f"[cases] left out: '{CASES_KEY}' in {where} must be a list of objects "
                    f"(input, expected, output, correct, feedback), but is {shown}")
    cases: list[dict[str, Any]] = []
    size = 0
    for item in value[:MAX_CASES]:
        case = _case(item)
        size += len(json.dumps(case))
        if size > MAX_CASES_CHARS:
            break
        cases.append(case)
    return cases, case_summary(cases, len(value))


def stored_cases(extra: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The cases an evaluation's ``extra`` holds (none when it holds something else)."""
    cases = extra.get(CASES_KEY)
    if not isinstance(cases, list):
        return ()
    return tuple(case for case in cases if isinstance(case, dict))


def is_failed(case: dict[str, Any]) -> bool:
    return case.get("correct") is False


def case_summary(cases: list[dict[str, Any]], reported: int | None = None) -> str:
    reported = len(cases) if reported is None else reported
    kept = f" ({reported} reported, the first {len(cases)} kept)" if reported > len(cases) else ""
    examples = f"{len(cases)} example{'' if len(cases) == 1 else 's'}"
    if not any("correct" in case for case in cases):
        return f"[cases] {examples}{kept}"
    failed = sum(1 for case in cases if is_failed(case))
    return f"[cases] {failed} of {examples} failed{kept}"
