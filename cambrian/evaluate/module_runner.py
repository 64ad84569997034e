"""Run a module-contract evaluator (`evaluate(program_path)`) and write its result as JSON.

    python -m cambrian.evaluate.module_runner --evaluator E.py --program P --out OUT.json
    python path/to/module_runner.py --evaluator E.py --program P --out OUT.json

Runs inside the sandbox, so it imports only the standard library (never the rest
of cambrian, never numpy: numpy values are recognised by duck typing). When
OpenEvolve is not installed, `openevolve.evaluation_result.EvaluationResult` is
provided so that OpenEvolve evaluators importing it run unchanged.

With ``--cascade-thresholds JSON`` and an evaluator defining ``evaluate_stage1``, OpenEvolve's
cascade runs instead of ``evaluate`` (``cascade_stages.py``): OUT.json then also holds
"stages" (each stage's own payload) and "cascade" (where it stopped).

OUT.json is one of:
    {"metrics": {...}, "artifacts": {...} | null, "non_finite": {path: "nan"|"inf"|"-inf"},
     "notes": [...]}                              exit 0
    {"invalid_return": "<what was returned>"}     exit 0  (neither a dict nor .metrics)
    {"exception": "<traceback>"}                  exit 1  (import or evaluate() raised)
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import json
import math
import os
import sys
import traceback
import types
from pathlib import Path
from typing import Any, NoReturn

MAX_DEPTH = 64
MAX_NOTES = 50
EXCEPTION_EXIT_CODE = 1
FALLBACK_MODULE_NAME = "cambrian_task_evaluator"
CASCADE_MODULE_NAME = "_cambrian_cascade_stages"


class _Converter:
    """Turns an evaluator's return value into JSON-safe data, recording every lossy step."""

    def __init__(self) -> None:
        self.non_finite: dict[str, str] = {}
        self.notes: list[str] = []

    def _note(self, text: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(text)

    def convert(self, value: Any, path: str, depth: int = 0) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and abs(value) <= sys.float_info.max:
            return value
        if isinstance(value, (int, float)):
            if isinstance(value, float) and math.isfinite(value):
                return value
            # NaN, inf, or an integer no float holds (10**400; over 4300 digits it would not
            # even be written as JSON). Shallow paths (metrics and public values) decide the
            # score: always kept.
            shown = repr(value) if isinstance(value, float) else (
                f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits "
                "(too large for a float)")
            if depth <= 2 or len(self.non_finite) < MAX_NOTES:
                self.non_finite[path] = shown
            self._note(f"{path} was {shown}; stored as null")
            return None
        if depth >= MAX_DEPTH:  # its repr could recurse as deep again: only its type is kept
            self._note(f"{path} is nested deeper than {MAX_DEPTH} levels; stored as a note")
            return f"[a {type(value).__name__} nested deeper than {MAX_DEPTH} levels]"
        if isinstance(value, dict):
            return {
                str(key): self.convert(item, f"{path}.{key}", depth + 1)
                for key, item in value.items()
            }
        if isinstance(value, (list, tuple, set, frozenset)):
            return [
                self.convert(item, f"{path}[{index}]", depth + 1)
                for index, item in enumerate(value)
            ]
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).decode("utf-8", errors="replace")
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        converted = _array_like_to_python(value)
        if converted is not value:
            return self.convert(converted, path, depth + 1)
        self._note(f"{path} is a {type(value).__name__}; stored as its str()")
        return str(value)


def _array_like_to_python(value: Any) -> Any:
    """numpy scalars/arrays (and look-alikes such as torch tensors) -> Python values."""
    for method in ("tolist", "item"):
        bound = getattr(value, method, None)
        if callable(bound):
            try:
                return bound()
            except Exception:  # noqa: BLE001 - an odd object; fall back to str()
                continue
    try:
        return float(value)  # Decimal, Fraction and other real numbers
    except Exception:  # noqa: BLE001 - not a number; the caller falls back to str()
        return value


def build_payload(returned: Any) -> dict[str, Any]:
    if isinstance(returned, dict):
        metrics, artifacts = returned, None
        if isinstance(returned.get("artifacts"), dict):  # {"combined_score": .., "artifacts": {..}}
            metrics = {k: v for k, v in returned.items() if k != "artifacts"}
            artifacts = returned["artifacts"]
    elif isinstance(getattr(returned, "metrics", None), dict):
        metrics = returned.metrics
        artifacts = getattr(returned, "artifacts", None)
        if artifacts is not None and not isinstance(artifacts, dict):
            artifacts = {"artifacts": artifacts}
    else:
        return {
            "invalid_return": (
                f"evaluate() returned a {type(returned).__name__} ({repr(returned)[:200]}); "
                "expected a dict of metrics or an object with a .metrics dict"
            )
        }
    converter = _Converter()
    payload: dict[str, Any] = {
        "metrics": converter.convert(metrics, "metrics"),
        "artifacts": None if artifacts is None else converter.convert(artifacts, "artifacts"),
    }
    payload["non_finite"] = converter.non_finite
    payload["notes"] = converter.notes
    return payload


@dataclasses.dataclass
class OpenEvolveStyleResult:
    """Stand-in for `openevolve.evaluation_result.EvaluationResult` (metrics + artifacts)."""

    metrics: dict[str, Any]
    artifacts: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, metrics: dict[str, Any]) -> OpenEvolveStyleResult:
        return cls(metrics=metrics)

    def to_dict(self) -> dict[str, Any]:
        return self.metrics


def provide_openevolve_result_type() -> None:
    """Lets OpenEvolve evaluators that import its result class run without OpenEvolve."""
    if importlib.util.find_spec("openevolve") is not None:
        return
    package = types.ModuleType("openevolve")
    package.__path__ = []  # a package: other submodules fail with a plain ModuleNotFoundError
    submodule = types.ModuleType("openevolve.evaluation_result")
    submodule.EvaluationResult = OpenEvolveStyleResult  # type: ignore[attr-defined]
    package.evaluation_result = submodule  # type: ignore[attr-defined]
    sys.modules["openevolve"] = package
    sys.modules["openevolve.evaluation_result"] = submodule


def _own_folder() -> os.stat_result | None:
    try:
        return os.stat(os.path.dirname(os.path.realpath(__file__)))
    except OSError:
        return None


def _same_folder(entry: str, own: os.stat_result | None) -> bool:
    """Whether the sys.path entry is this file's folder (one stat, where resolving every entry
    took a look-up per path component: most of this runner's own CPU in a sandbox)."""
    try:
        return own is not None and os.path.samestat(os.stat(entry), own)
    except OSError:
        return False


def load_evaluator(evaluator_path: Path) -> Any:
    # Like running the evaluator in place: its folder first on sys.path, and not
    # this file's folder (which would let our sibling modules shadow the task's).
    own_folder = _own_folder()
    sys.path[:] = [entry for entry in sys.path if not entry or not _same_folder(entry, own_folder)]
    sys.path.insert(0, str(evaluator_path.parent))
    # A real module name lets pickle/multiprocessing find the evaluator's functions.
    name = evaluator_path.stem
    if not name.isidentifier() or name in sys.modules:
        name = FALLBACK_MODULE_NAME
    provide_openevolve_result_type()
    spec = importlib.util.spec_from_file_location(name, evaluator_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {evaluator_path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def call_evaluator(function: Any, program_path: str) -> Any:
    returned = function(program_path)
    if inspect.isawaitable(returned):
        import asyncio  # only for async evaluators; keeps the common path light

        async def _await(awaitable: Any) -> Any:
            return await awaitable

        returned = asyncio.run(_await(returned))
    return returned


def _cascade_module() -> Any:
    """cascade_stages.py beside this file, however this file was started (by path, with -m,
    or under another interpreter that has no cambrian installed)."""
    path = Path(__file__).resolve().with_name("cascade_stages.py")
    loaded = sys.modules.get(CASCADE_MODULE_NAME)  # loaded ahead by the warm worker's server
    if loaded is not None and getattr(loaded, "__file__", None) == str(path):
        return loaded
    spec = importlib.util.spec_from_file_location(CASCADE_MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_evaluator(evaluator_path: Path, program_path: str,
                  cascade_thresholds: list[float] | None = None) -> dict[str, Any]:
    """The payload of evaluate(program_path), or of OpenEvolve's cascade."""
    cascade = _cascade_module() if cascade_thresholds is not None else None
    module = load_evaluator(evaluator_path)
    if cascade is not None and cascade.has_cascade(module):
        return cascade.run_cascade(module, program_path, cascade_thresholds, call_evaluator,
                                   build_payload)
    evaluate = getattr(module, "evaluate", None)
    if not callable(evaluate):
        raise TypeError(f"{evaluator_path} defines no callable evaluate(program_path)")
    return build_payload(call_evaluator(evaluate, program_path))


def write_json_atomically(out_path: Path, payload: dict[str, Any]) -> None:
    # A reader must never see half a file, e.g. if the group is killed mid-write.
    partial = out_path.with_name(out_path.name + ".partial")
    partial.write_text(json.dumps(payload, allow_nan=False), encoding="utf-8")
    os.replace(partial, out_path)


USAGE = ("usage: module_runner.py --evaluator E.py --program P --out OUT.json "
         "[--cascade-thresholds JSON]")
OPTIONS = ("--evaluator", "--program", "--out", "--cascade-thresholds")


def _usage_error(message: str) -> NoReturn:
    sys.stderr.write(f"{USAGE}\nmodule_runner.py: error: {message}\n")
    raise SystemExit(2)


def parse_args(argv: list[str]) -> dict[str, str]:
    """``--name value`` or ``--name=value`` for the four options (argparse, with its gettext and
    locale look-ups, cost more than a warm evaluation's own start); a usage error exits 2."""
    found: dict[str, str] = {}
    index = 0
    while index < len(argv):
        name, has_value, value = argv[index].partition("=")
        if name not in OPTIONS:
            _usage_error(f"unrecognised argument: {argv[index]}")
        if not has_value:
            index += 1
            if index >= len(argv):
                _usage_error(f"{name} expects a value")
            value = argv[index]
        found[name] = value
        index += 1
    missing = [name for name in OPTIONS[:3] if name not in found]
    if missing:
        _usage_error(f"required: {', '.join(missing)}")
    return found


def main(argv: list[str] | None = None) -> int:
    options = parse_args(sys.argv[1:] if argv is None else list(argv))
    thresholds = options.get("--cascade-thresholds")
    cascade_thresholds = json.loads(thresholds) if thresholds is not None else None
    evaluator, program = Path(options["--evaluator"]), options["--program"]
    out_path = Path(options["--out"]).resolve()  # the evaluated program may chdir
    try:
        payload = run_evaluator(evaluator.resolve(), program, cascade_thresholds)
    except (Exception, SystemExit):  # SystemExit too: a program calling sys.exit() did not finish
        trace = traceback.format_exc()
        sys.stderr.write(trace)
        sys.stderr.flush()
        write_json_atomically(out_path, {"exception": trace})
        return EXCEPTION_EXIT_CODE
    write_json_atomically(out_path, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
