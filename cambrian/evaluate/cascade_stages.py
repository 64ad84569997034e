"""OpenEvolve's cascade evaluation, run inside the sandbox by module_runner (standard library
only, like it).

An evaluator defining ``evaluate_stage1`` is run stage by stage: ``evaluate_stage1``; then
``evaluate_stage2`` when stage 1's score reaches ``thresholds[0]``; then ``evaluate_stage3``
when the merged stages 1-2 reach ``thresholds[1]``. A stage's score is its ``combined_score``,
else the mean of its numeric metrics other than ``error`` (OpenEvolve's ``_passes_threshold``).
Metrics are merged as OpenEvolve merges them (the numeric ones, later stages overriding
earlier), artifacts too. A program stopped by a threshold keeps the merged metrics of the
stages it ran, as OpenEvolve ranks it; the payload says where and why it stopped
(``cascade``) and carries every stage's own payload (``stages``), one evaluations row each.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

STAGE_FUNCTIONS = ("evaluate_stage1", "evaluate_stage2", "evaluate_stage3")

Call = Callable[[Callable[[str], Any], str], Any]  # (function, program path) -> returned value
BuildPayload = Callable[[Any], dict[str, Any]]


def has_cascade(module: Any) -> bool:
    return callable(getattr(module, STAGE_FUNCTIONS[0], None))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def stage_score(metrics: dict[str, Any]) -> float | None:
    """combined_score, else the mean of the numeric metrics but ``error``; None: neither."""
    score = metrics.get("combined_score")
    if _is_number(score):
        return float(score)
    values = [float(v) for k, v in metrics.items() if k != "error" and _is_number(v)]
    return sum(values) / len(values) if values else None


def _merge(into: dict[str, Any], payload: dict[str, Any]) -> None:
    for name, value in (payload.get("metrics") or {}).items():
        if name != "error" and isinstance(value, (int, float)):  # bools kept as flags
            into["metrics"][name] = value
    into["artifacts"].update(payload.get("artifacts") or {})
    into["non_finite"].update(payload.get("non_finite") or {})
    into["notes"].extend(payload.get("notes") or [])


def run_cascade(module: Any, program_path: str, thresholds: list[float], call: Call,
                build_payload: BuildPayload) -> dict[str, Any]:
    stages: list[dict[str, Any]] = []
    merged: dict[str, Any] = {"metrics": {}, "artifacts": {}, "non_finite": {}, "notes": []}
    for index, name in enumerate(STAGE_FUNCTIONS):
        function = getattr(module, name, None)
        if index > 0 and not callable(function):
            break  # no further stage: the cascade is complete
        started = time.monotonic()
        payload = build_payload(call(function, program_path))
        stages.append({"stage": f"stage{index + 1}", "payload": payload,
                       "duration_s": time.monotonic() - started})
        if "invalid_return" in payload:
            return {**payload, "stages": stages}
        if index == 0:
            # Stage 1 alone is returned as it is (its error, its strings), as OpenEvolve does.
            merged = {key: payload.get(key) or ({} if key != "notes" else [])
                      for key in ("metrics", "artifacts", "non_finite", "notes")}
            merged["metrics"] = dict(merged["metrics"])
            merged["artifacts"] = dict(merged["artifacts"])
        else:
            _merge(merged, payload)
        if index >= len(thresholds) or index + 1 >= len(STAGE_FUNCTIONS):
            break
        if not callable(getattr(module, STAGE_FUNCTIONS[index + 1], None)):
            break
        score = stage_score(merged["metrics"])
        if score is None or score < thresholds[index]:
            merged["cascade"] = {"stopped_after": f"stage{index + 1}", "score": score,
                                 "threshold": thresholds[index]}
            break
    merged.setdefault("cascade", {"completed": len(stages)})
    merged["stages"] = stages
    return merged


__all__ = ["has_cascade", "run_cascade", "stage_score"]
