"""The task's scorer: validates one output and scores it, contained like every evaluator.

Two shapes, both task code, which runs in the sandbox (`sandbox.run_sandboxed`: the
allow-listed environment, so no API key; writes only to a scratch folder of its own; the run's
folder hidden) as the sandbox user, never in Cambrian's process:
- script:   ``python score.py INPUT_PATH OUTPUT_PATH`` prints a JSON object as its last line,
            ``{"score": 123.0}`` or ``{"error": "why the output is invalid"}``;
- function: the file defines ``score(input_text, output_text)`` returning such a dict or a bare
            number, and raising (e.g. ValueError) to reject an output; `score_call.py` imports
            it and calls it, in the sandbox.
``auto`` picks the function when the file defines a top-level ``score`` with two parameters.
Both run in a warm interpreter (`warm_worker.py`, forked per case through the same containment)
that has imported the scorer's top-level packages, else in a fresh one.
"""

from __future__ import annotations

import ast
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cambrian.core.python_ast import parse_python
from cambrian.evaluate.judge.score_call import FILE_CALL_MODULE
from cambrian.evaluate.sandbox import SandboxResult, WarmWorkerLost, run_sandboxed
from cambrian.evaluate.task_function import FILE_CALL_PATH
from cambrian.evaluate.warm_worker import WarmWorker, preload_names

SCORE_CALL_PATH = Path(__file__).with_name("score_call.py")
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
        hidden_paths: Sequence[Path] = (),
        warm: bool = True,
    ) -> None:
        self.path = Path(path).resolve()
        self.python = python
        self.timeout_s = timeout_s
        self.hidden_paths = tuple(hidden_paths)
        if mode == "auto":
            mode = "function" if defines_score_function(self.path) else "script"
        self.mode = mode
        self.warm = self._warm_worker() if warm else None

    def _warm_worker(self) -> WarmWorker:
        """Preloads the scorer's top-level imports, never a name its folder holds."""
        folder = self.path.parent
        local = {entry.name.split(".")[0] for entry in folder.iterdir()}
        return WarmWorker(self.python, preload_names([self.path, SCORE_CALL_PATH], local), local,
                          own_modules=({FILE_CALL_MODULE: FILE_CALL_PATH}
                                       if self.mode == "function" else {}))

    async def close(self) -> None:
        if self.warm is not None:
            await self.warm.close()

    def argv(self, input_path: Path, output_path: Path) -> list[str]:
        files = [str(Path(input_path).resolve()), str(Path(output_path).resolve())]
        if self.mode == "function":
            return [self.python, str(SCORE_CALL_PATH), str(self.path), *files]
        return [self.python, str(self.path), *files]

    async def score(self, input_path: Path, output_path: Path, scratch_dir: Path) -> ScoreOutcome:
        """Scores the output file of one case; `scratch_dir` is the scorer's own folder (a
        fresh one per case, never the program's)."""
        argv = self.argv(input_path, output_path)
        try:
            run = await self._run(argv, scratch_dir, self.warm)
        except WarmWorkerLost:
            run = await self._run(argv, scratch_dir, None)
        return self._outcome(run)

    async def _run(self, argv: list[str], scratch_dir: Path,
                   warm: WarmWorker | None) -> SandboxResult:
        # Its folder is readable (a scorer may read files beside it) and its working directory;
        # score_call.py loads file_call.py.
        return await run_sandboxed(
            argv, cwd=self.path.parent, env=None, timeout_s=self.timeout_s, memory_limit_mb=None,
            max_output_bytes=SCORER_MAX_OUTPUT_BYTES, scratch_dir=scratch_dir,
            read_only_paths=[self.path.parent, FILE_CALL_PATH], hidden_paths=self.hidden_paths,
            warm=warm,
        )

    def _outcome(self, run: SandboxResult) -> ScoreOutcome:
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
        if self.mode == "function":
            if isinstance(reply, dict) and "raised" in reply:
                return ScoreOutcome.rejected(f"scorer rejected the output: {reply['raised']}")
            if not isinstance(reply, dict) or "reply" not in reply:
                return ScoreOutcome.rejected("scorer call printed no result")
            reply = reply["reply"]
        return interpret_reply(reply)
