"""An evaluation that failed because a module could not be imported: which module, and what
to do about it (install it, or run the evaluator under another interpreter)."""

from __future__ import annotations

import re

from cambrian.core.evaluation import EvaluationResult

_NO_MODULE = re.compile(r"No module named '([^']+)'")


def missing_module(result: EvaluationResult) -> str | None:
    """The module a failed evaluation could not import (its first mention), or None."""
    if result.correct:
        return None
    for text in (result.error, result.stderr, result.stdout, result.text_feedback):
        match = _NO_MODULE.search(text or "")
        if match:
            return match.group(1)
    return None


def missing_module_advice(module: str, python: str) -> str:
    top = module.split(".")[0]
    return (f"the evaluation cannot import the module '{module}' (ModuleNotFoundError under "
            f"{python}): install '{top}' into that environment, or set evaluation.python to "
            "the interpreter of an environment that has it (e.g. --set "
            "evaluation.python=/path/to/venv/bin/python)")


__all__ = ["missing_module", "missing_module_advice"]
