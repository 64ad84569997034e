"""The task's scorer: validates one output and scores it.

Two shapes, both task-owned (trusted) code:
- script:   ``python score.py INPUT_PATH OUTPUT_PATH`` prints a JSON object as its last line,
            ``{"score": 123.0}`` or ``{"error": "why the output is invalid"}``;
- function: the file defines ``score(input_text, output_text)`` returning such a dict or a bare
            number, and raising (e.g. ValueError) to reject an output. It is imported once and
            called in a worker thread, which saves a process start per case.
``auto`` picks the function when the file defines a top-level ``score`` with two parameters.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import math
import sys
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from cambrian.core.python_ast import parse_python
from cambrian.evaluate.sandbox import run_sandboxed

SCORER_MAX_OUTPUT_BYTES = 200_000
MESSAGE_CHARS = 500


@dataclass(frozen=True)
class ScoreOutcome:
    score: float | None
    error: str | None  # why the output was rejected (a WA), None when scored

    @staticmethod
    def rejected(message: str) -> ScoreOutcome:
        return ScoreOutcome(score=None, error=message[:MESSAGE_CHARS])


def interpret_reply(reply: Any) -> ScoreOutcome:
    """A scorer's reply -> outcome; anything but a finite score or an error is rejected."""
    if isinstance(reply, bool):
        return ScoreOutcome.rejected(f"scorer returned {reply!r}, not a score")
    if isinstance(reply, (int, float)):
        value = float(reply)
    elif isinstance(reply, dict):
        if reply.get("error"):
            return ScoreOutcome.rejected(str(reply["error"]))
        value = reply.get("score")  # type: ignore[assignment]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return ScoreOutcome.rejected(f"scorer reply has no numeric 'score': {reply!r}")
        value = float(value)
    else:
        return ScoreOutcome.rejected(f"scorer returned {type(reply).__name__}, not a score")
    if not math.isfinite(value):
        return ScoreOutcome.rejected(f"scorer returned a non-finite score {value!r}")
    return ScoreOutcome(score=value, error=None)


def defines_score_function(path: Path) -> bool:
    try:
        tree = parse_python(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "score":
            arguments = node.args
            if len(arguments.posonlyargs) + len(arguments.args) >= 2 or arguments.vararg:
                return True
    return False


class Scorer:
    def __init__(
        self,
        path: Path,
        *,
        mode: Literal["auto", "script", "function"] = "auto",
        python: str = sys.executable,
        timeout_s: float = 60.0,
    ) -> None:
        self.path = Path(path).resolve()
        self.python = python
        self.timeout_s = timeout_s
        if mode == "auto":
            mode = "function" if defines_score_function(self.path) else "script"
        self.mode = mode
        self._function: Callable[[str, str], Any] | None = None

    async def score(self, input_path: Path, output_path: Path, output_text: str) -> ScoreOutcome:
        if self.mode == "function":
            return await self._score_by_function(input_path, output_text)
        return await self._score_by_script(input_path, output_path)

    def _load_function(self) -> Callable[[str, str], Any]:
        if self._function is None:
            name = f"cambrian_judge_scorer_{uuid.uuid4().hex[:8]}"
            spec = importlib.util.spec_from_file_location(name, self.path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import scorer {self.path}")
            module: ModuleType = importlib.util.module_from_spec(spec)
            # Registered first: dataclasses and pickling look their module up by name.
            sys.modules[name] = module
            spec.loader.exec_module(module)
            function = getattr(module, "score", None)
            if not callable(function):
                raise ImportError(f"{self.path} defines no score(input_text, output_text)")
            self._function = function
        return self._function

    async def _score_by_function(self, input_path: Path, output_text: str) -> ScoreOutcome:
        def call() -> Any:
            function = self._load_function()
            return function(input_path.read_text(encoding="utf-8"), output_text)

        try:
            reply = await asyncio.wait_for(asyncio.to_thread(call), self.timeout_s)
        except asyncio.TimeoutError:
            return ScoreOutcome.rejected(f"scorer took longer than {self.timeout_s:g} s")
        except Exception as error:  # noqa: BLE001 - a rejection, reported as the case's message
            last = traceback.format_exception_only(type(error), error)[-1].strip()
            return ScoreOutcome.rejected(f"scorer rejected the output: {last}")
        return interpret_reply(reply)

    async def _score_by_script(self, input_path: Path, output_path: Path) -> ScoreOutcome:
        run = await run_sandboxed(
            [self.python, str(self.path), str(input_path), str(output_path)],
            cwd=self.path.parent, env=None, timeout_s=self.timeout_s, memory_limit_mb=None,
            max_output_bytes=SCORER_MAX_OUTPUT_BYTES,
        )
        if run.timed_out:
            return ScoreOutcome.rejected(f"scorer took longer than {self.timeout_s:g} s")
        lines = [line for line in run.stdout.strip().splitlines() if line.strip()]
        if run.returncode != 0 and not lines:
            tail = run.stderr.strip().splitlines()[-1:] or [f"exit code {run.returncode}"]
            return ScoreOutcome.rejected(f"scorer failed on this output: {tail[0]}")
        try:
            reply = json.loads(lines[-1]) if lines else None
        except ValueError:
            return ScoreOutcome.rejected(f"scorer printed no JSON result: {lines[-1][:200]!r}")
        return interpret_reply(reply)
