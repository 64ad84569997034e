"""Turn what an evaluator reported (a returned dict, or metrics.json/correct.json) into an
EvaluationResult, rejecting malformed output with an error that says what and where.

Shared rules: a status of "ok" always carries a finite combined_score. A NaN/inf
score, or an integer too large for a float (10**400), makes the result "incorrect"; a missing
or non-numeric one makes it "invalid_output". For non-ok results combined_score stays None so
that nothing downstream can rank a failed program; a score the evaluator did report is kept
in extra["reported_combined_score"].

Whatever a candidate returns is tamed before it is read (``tame``): a number no float holds
(NaN, inf, an integer beyond a float's range) becomes null and is named, so it decides the
score as NaN does; nesting deeper than MAX_METRIC_DEPTH becomes a short text. Nothing a
candidate returns can make the mapping raise.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cambrian.core.evaluation import EvalStatus, EvaluationResult, is_finite_number
from cambrian.evaluate.case_feedback import CASES_KEY, read_cases

MAX_RESULT_FILE_BYTES = 8 * 1024 * 1024
MAX_EXTRA_FIELD_BYTES = 256 * 1024
EXTRA_PREVIEW_CHARS = 2_000
MAX_TEXT_FEEDBACK_CHARS = 16_000
MAX_ARTIFACT_FEEDBACK_CHARS = 2_000
MAX_ERROR_CHARS = 4_000

MODULE_RESERVED_KEYS = frozenset(
    {"combined_score", "public", "private", "text_feedback", "correct", "error", CASES_KEY}
)
# OpenEvolve evaluators report an invalid program as validity 0 (often with no error key).
VALIDITY_KEYS = ("validity", "valid", "is_valid")
COMMAND_RESERVED_KEYS = frozenset(
    {"combined_score", "public", "private", "text_feedback", "extra_data", CASES_KEY}
)
MAX_METRIC_DEPTH = 64
# Integer literals longer than this are not parsed (Python refuses over 4300 digits, and any
# integer over 309 digits is beyond a float anyway).
MAX_INT_DIGITS = 400
MAX_NAMED_VALUES = 50  # non-finite values named one by one; shallow ones always are


class OutputRejected(Exception):
    def __init__(self, status: EvalStatus, message: str) -> None:
        super().__init__(message)
        self.status: EvalStatus = status
        self.message = message


def invalid(message: str) -> OutputRejected:
    return OutputRejected("invalid_output", message)


@dataclass(frozen=True)
class OversizedInt:
    """An integer literal of a result file too long to parse (``read_json_object``)."""

    digits: int


def _json_int(text: str) -> int | OversizedInt:
    digits = len(text.lstrip("-"))
    return OversizedInt(digits) if digits > MAX_INT_DIGITS else int(text)


def _unrepresentable(value: Any) -> str | None:
    """How to name a number no float holds (None: a float holds it, or it is no number)."""
    if isinstance(value, OversizedInt):
        return f"an integer of {value.digits} digits (too large for a float)"
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and abs(value) > sys.float_info.max:
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"an integer of about {digits} digits (too large for a float)"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return None


def tame(value: Any, path: str, named: dict[str, str], depth: int = 0) -> Any:
    """``value`` with every number no float holds replaced by None (and named in ``named``,
    keyed by its path, as module_runner names NaN), and nesting deeper than MAX_METRIC_DEPTH
    replaced by a short text: what is left can be compared, formatted and stored."""
    unusable = _unrepresentable(value)
    if unusable is not None:
        if depth <= 2 or len(named) < MAX_NAMED_VALUES:
            named.setdefault(path, unusable)
        return None
    if isinstance(value, (dict, list)) and depth >= MAX_METRIC_DEPTH:
        return f"[nested deeper than {MAX_METRIC_DEPTH} levels]"
    if isinstance(value, dict):
        return {str(key): tame(item, f"{path}.{key}", named, depth + 1)
                for key, item in value.items()}
    if isinstance(value, list):
        return [tame(item, f"{path}[{index}]", named, depth + 1)
                for index, item in enumerate(value)]
    return value


@dataclass
class ResultDraft:
    """Fields parsed so far, so a rejection late in parsing still keeps the feedback."""

    public: dict[str, Any] = field(default_factory=dict)
    private: dict[str, Any] = field(default_factory=dict)
    text_feedback: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def finish(
        self, status: EvalStatus, combined_score: float | None = None, error: str = ""
    ) -> EvaluationResult:
        return EvaluationResult(
            status=status,
            combined_score=float(combined_score) if status == "ok" else None,
            public=self.public,
            private=self.private,
            text_feedback=truncate_text(self.text_feedback, MAX_TEXT_FEEDBACK_CHARS, "feedback"),
            error=truncate_text(error, MAX_ERROR_CHARS, "error"),
            extra=self.extra,
        )

    def keep_reported_score(self, value: Any) -> None:
        if is_finite_number(value):
            self.extra["reported_combined_score"] = float(value)


def truncate_text(text: str, limit: int, label: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[cambrian: {len(text) - limit} more characters of {label} truncated]"


def describe(value: Any) -> str:
    """E.g. 'an array [1, 2]', 'a string "abc"' -- for error messages."""
    kinds = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }
    kind = kinds.get(type(value), f"a {type(value).__name__}")
    return f"{kind} {json.dumps(value, default=repr)[:80]}"


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object an evaluation wrote at ``path``, never through a link (the folder is
    the candidate's: a link could point at any file Cambrian may read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise invalid(f"{path} was not written (no such file)") from None
    except OSError as error:
        raise invalid(f"{path} could not be read ({error.strerror}): results must be plain "
                      "files, not links") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise invalid(f"{path} is not a plain file")
        if info.st_size > MAX_RESULT_FILE_BYTES:
            raise invalid(f"{path} is {info.st_size} bytes; result files over "
                          f"{MAX_RESULT_FILE_BYTES} bytes are rejected")
        data = handle.read(info.st_size + 1)  # read(n) sets n bytes aside: not the cap
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise invalid(f"{path} is not UTF-8 text: {error}") from None
    try:
        value = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as error:
        raise invalid(
            f"{path} is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}; "
            f"it starts with {text[:120]!r}"
        ) from None
    except RecursionError:
        raise invalid(f"{path} nests its JSON too deeply to be read") from None
    if not isinstance(value, dict):
        raise invalid(f"{path} must hold a JSON object ({{...}}), but holds {describe(value)}")
    return value


def optional_dict(source: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = source.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid(f"'{key}' in {where} must be an object/dict, but is {describe(value)}")
    return value


def feedback_text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "\n".join(value)
    raise invalid(
        f"'text_feedback' in {where} must be a string or a list of strings, "
        f"but is {describe(value)}"
    )


def capped(value: Any, label: str) -> Any:
    """Keeps free-form extras from bloating storage: oversized values become a preview."""
    dumped = json.dumps(value, default=repr)
    if len(dumped) <= MAX_EXTRA_FIELD_BYTES:
        return value
    reason = f"{label} was {len(dumped)} bytes as JSON, over the {MAX_EXTRA_FIELD_BYTES}-byte cap"
    return {"cambrian_dropped": reason, "preview": dumped[:EXTRA_PREVIEW_CHARS]}


def require_finite_score(value: Any, where: str, non_finite_repr: str | None = None) -> float:
    if non_finite_repr is not None:
        raise OutputRejected(
            "incorrect", f"combined_score in {where} is {non_finite_repr}, not a finite number"
        )
    if value is None:
        raise invalid(f"combined_score in {where} is null; expected a finite number")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(f"combined_score in {where} is {describe(value)}; expected a finite number")
    if not math.isfinite(value):
        raise OutputRejected(
            "incorrect", f"combined_score in {where} is {value!r}, not a finite number"
        )
    return float(value)


def _artifact_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=repr)


def _artifact_feedback(artifacts: dict[str, Any]) -> str:
    """Every artifact, as OpenEvolve shows them in the next prompt (text as is, the rest as
    JSON), each cut at MAX_ARTIFACT_FEEDBACK_CHARS."""
    sections = [
        f"[artifact {key}]\n"
        f"{truncate_text(_artifact_text(value), MAX_ARTIFACT_FEEDBACK_CHARS, 'artifact')}"
        for key, value in artifacts.items()
        if value is not None and _artifact_text(value).strip()
    ]
    return "\n".join(sections)


def reported_invalid(metrics: dict[str, Any]) -> str | None:
    """'validity=0.0' when the evaluator marked the program invalid (OpenEvolve style)."""
    for key in VALIDITY_KEYS:
        value = metrics.get(key)
        if value is False or (_is_number(value) and value == 0):
            return f"{key}={value!r}"
    return None


def _add_cases(draft: ResultDraft, value: Any, where: str) -> None:
    """The per-example results (``case_feedback.py``) into extra, their count into feedback."""
    cases, line = read_cases(value, where)
    if cases:
        draft.extra[CASES_KEY] = capped(cases, "cases")
    draft.text_feedback = _append(draft.text_feedback, line)


def _append(text: str, addition: str) -> str:
    return f"{text}\n{addition}" if text and addition else text or addition


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------- module contract


def map_module_payload(payload: dict[str, Any], where: str) -> EvaluationResult:
    """`payload` is what module_runner wrote for a successful evaluate() call.

    `where` names the returned dict in messages, e.g. "evaluate() of /task/evaluator.py".
    A cascade's payload (``cascade_stages.py``) also carries each stage's own payload.
    """
    if "stages" in payload:
        return _map_cascade(payload, where)
    draft = ResultDraft()
    if "invalid_return" in payload:
        return draft.finish("invalid_output", error=f"{where}: {payload['invalid_return']}")
    non_finite: dict[str, str] = dict(payload.get("non_finite") or {})
    metrics = tame(payload.get("metrics"), "metrics", non_finite)
    if not isinstance(metrics, dict):
        return draft.finish(
            "invalid_output", error=f"{where}: no metrics dict in the runner's output"
        )
    try:
        draft.private = optional_dict(metrics, "private", where)
        draft.text_feedback = feedback_text(metrics.get("text_feedback"), where)
        _add_cases(draft, metrics.get(CASES_KEY), where)
        top_level_numeric = {
            key: value
            for key, value in metrics.items()
            if key not in MODULE_RESERVED_KEYS
            and (_is_number(value) or f"metrics.{key}" in non_finite)
        }
        if "public" in metrics:
            draft.public = optional_dict(metrics, "public", where)
            others = {k: v for k, v in metrics.items() if k not in MODULE_RESERVED_KEYS}
        else:
            draft.public = top_level_numeric
            others = {
                k: v
                for k, v in metrics.items()
                if k not in MODULE_RESERVED_KEYS and k not in top_level_numeric
            }
        if others:
            draft.extra["other_metrics"] = capped(others, "other metrics")
        artifacts = tame(payload.get("artifacts"), "artifacts", non_finite)
        if isinstance(artifacts, dict) and artifacts:
            draft.extra["artifacts"] = capped(artifacts, "artifacts")
            draft.text_feedback = _append(draft.text_feedback, _artifact_feedback(artifacts))
        notes = [str(note) for note in payload.get("notes") or []]
        notes += [f"{path} was {what}; stored as null" for path, what in non_finite.items()
                  if path not in (payload.get("non_finite") or {})]
        if notes:
            draft.extra["notes"] = notes

        invalid_flag = reported_invalid(metrics)
        if (("correct" in metrics and not metrics["correct"]) or metrics.get("error")
                or invalid_flag):
            draft.keep_reported_score(metrics.get("combined_score"))
            if metrics.get("error"):
                reason = str(metrics["error"])
            elif invalid_flag:
                reason = f"evaluator reported {invalid_flag}"
                draft.extra["reported_invalid"] = invalid_flag  # its output tells why
            else:
                reason = f"evaluator reported correct={metrics['correct']!r}"
            return draft.finish("incorrect", error=reason)
        score = _module_score(metrics, top_level_numeric, draft, non_finite, where)
    except OutputRejected as rejection:
        return draft.finish(rejection.status, error=rejection.message)
    return draft.finish("ok", score)


def _map_cascade(payload: dict[str, Any], where: str) -> EvaluationResult:
    """The merged result, with one stage record per stage (``extra["stages"]``, stored as one
    evaluations row each) and where the cascade stopped (``extra["cascade"]``)."""
    final = {k: v for k, v in payload.items() if k not in ("stages", "cascade")}
    result = map_module_payload(final, where)
    records = []
    for stage in payload["stages"]:
        own = map_module_payload(stage["payload"], f"{where}, {stage['stage']}")
        records.append({"stage": stage["stage"], "status": own.status,
                        "combined_score": own.combined_score, "public": own.public,
                        "text_feedback": own.text_feedback, "error": own.error,
                        "duration_s": float(stage.get("duration_s") or 0.0)})
    result.extra["stages"] = records
    cascade = tame(payload.get("cascade"), "cascade", {})
    if isinstance(cascade, dict):
        result.extra["cascade"] = cascade
        if "stopped_after" in cascade and result.status == "ok":
            score = cascade.get("score")
            shown = f"its score {score:.6g}" if _is_number(score) else "no score"
            result.text_feedback = _append(
                result.text_feedback,
                f"[cascade] stopped after {cascade['stopped_after']}: {shown} is under the "
                f"threshold {cascade.get('threshold')} for the next stage")
    return result


def _module_score(
    metrics: dict[str, Any],
    top_level_numeric: dict[str, Any],
    draft: ResultDraft,
    non_finite: dict[str, str],
    where: str,
) -> float:
    reported = metrics.get("combined_score")
    if isinstance(reported, list):
        # A tuple such as (mean_score, speedup) (OpenEvolve's moe_lb): OpenEvolve cannot read
        # it as a number and ranks the program by the mean of its other numeric metrics.
        why = (f"combined_score {json.dumps(reported, default=repr)[:80]} is not a number; "
               "as OpenEvolve does, the mean of the other numeric metrics is the score")
        if not top_level_numeric:
            raise invalid(f"{where}: {why}, and there are none; its keys are {sorted(metrics)}")
        draft.extra["reported_combined_score"] = reported
        return _mean_score(top_level_numeric, "metrics.", draft, non_finite, where, why)
    if "combined_score" in metrics:
        return require_finite_score(reported, where, non_finite.get("metrics.combined_score"))
    candidates, prefix = top_level_numeric, "metrics."
    if not candidates and "public" in metrics:
        prefix = "metrics.public."
        candidates = {
            key: value
            for key, value in draft.public.items()
            if _is_number(value) or f"{prefix}{key}" in non_finite
        }
    if not candidates:
        raise invalid(
            f"{where} returned no 'combined_score' and no numeric metric to average; "
            f"its keys are {sorted(metrics)}"
        )
    return _mean_score(candidates, prefix, draft, non_finite, where,
                       "evaluate() returned no 'combined_score'")


def _mean_score(candidates: dict[str, Any], prefix: str, draft: ResultDraft,
                non_finite: dict[str, str], where: str, why: str) -> float:
    """The mean of ``candidates`` (OpenEvolve's fitness without a numeric combined_score)."""
    bad = {
        key: non_finite[f"{prefix}{key}"] for key in candidates if f"{prefix}{key}" in non_finite
    }
    if bad:
        raise OutputRejected(
            "incorrect",
            f"{where}: {why}, and the metrics it would be averaged from are not all finite: "
            f"{bad}",
        )
    draft.extra["combined_score_source"] = f"mean of {sorted(candidates)} ({why})"
    return sum(float(value) for value in candidates.values()) / len(candidates)


# --------------------------------------------------------------- command contract


@dataclass(frozen=True)
class CorrectnessReport:
    correct: bool
    error: str


def read_correct_json(path: Path) -> CorrectnessReport | None:
    if not os.path.lexists(path):
        return None
    report = tame(read_json_object(path), "correct", {})
    if "correct" not in report:
        raise invalid(
            f'{path} has no \'correct\' key; expected {{"correct": true|false, "error": ...}}'
        )
    correct = report["correct"]
    if not isinstance(correct, bool):
        raise invalid(f"'correct' in {path} must be true or false, but is {describe(correct)}")
    error = report.get("error")
    return CorrectnessReport(correct=correct, error="" if error is None else str(error))


def map_command_results(results_dir: Path) -> EvaluationResult:
    metrics_path = results_dir / "metrics.json"
    correct_path = results_dir / "correct.json"
    draft = ResultDraft()
    try:
        report = read_correct_json(correct_path)
    except OutputRejected as rejection:
        return draft.finish(rejection.status, error=rejection.message)
    try:
        metrics = read_json_object(metrics_path)
    except OutputRejected as rejection:
        if report is not None and not report.correct:
            reason = report.error or f"{correct_path} reports correct=false"
            return draft.finish("incorrect", error=f"{reason}\n(also: {rejection.message})")
        return draft.finish(rejection.status, error=rejection.message)

    where = str(metrics_path)
    non_finite: dict[str, str] = {}
    metrics = tame(metrics, "metrics", non_finite)
    if non_finite:
        draft.extra["notes"] = [f"{path} was {what}; stored as null"
                                for path, what in non_finite.items()]
    try:
        draft.public = optional_dict(metrics, "public", where)
        draft.private = optional_dict(metrics, "private", where)
        draft.text_feedback = feedback_text(metrics.get("text_feedback"), where)
        _add_cases(draft, metrics.get(CASES_KEY), where)
        if "extra_data" in metrics:
            draft.extra["extra_data"] = capped(metrics["extra_data"], "extra_data")
        others = {k: v for k, v in metrics.items() if k not in COMMAND_RESERVED_KEYS}
        if others:
            draft.extra["other_metrics"] = capped(others, "other metrics")
        if report is not None and not report.correct:
            draft.keep_reported_score(metrics.get("combined_score"))
            reason = report.error or f"{correct_path} reports correct=false (no error given)"
            return draft.finish("incorrect", error=reason)
        if "combined_score" not in metrics:
            raise invalid(f"{where} has no 'combined_score' key; its keys are {sorted(metrics)}")
        where_score = where if report is not None else f"{where} (and there is no correct.json)"
        score = require_finite_score(metrics["combined_score"], where_score,
                                     non_finite.get("metrics.combined_score"))
    except OutputRejected as rejection:
        return draft.finish(rejection.status, error=rejection.message)
    return draft.finish("ok", score)
