"""The improvement step of a program in its language: Python (``improve_step.py``) or C++
(``improve_step_cpp.py``), each module offering the same four functions; other languages have
none."""

from __future__ import annotations

from types import ModuleType

from cambrian.lang.language import Language
from cambrian.mutate import improve_step, improve_step_cpp
from cambrian.mutate.improve_step import Scaffold

_STEPS: dict[str, ModuleType] = {"python": improve_step, "cpp": improve_step_cpp}


def _step(language: Language | str) -> ModuleType | None:
    return _STEPS.get(language if isinstance(language, str) else language.name)


def scaffold(source: str, language: Language | str) -> Scaffold | None:
    """``source`` with an improvement step wired after its entry function, or None."""
    step = _step(language)
    return step.scaffold(source) if step else None


def step_instruction(scaffold_: Scaffold, function: str, move: str) -> str:
    return _STEPS[scaffold_.language].step_instruction(scaffold_, function, move)


def step_contract_error(source: str, language: Language) -> str:
    """Why a child breaks its step's contract before it runs ("" when it keeps it)."""
    step = _step(language)
    return step.step_contract_error(source) if step else ""


def unwritten_step_error(parent: str, child: str, function: str, language: Language) -> str:
    """Why an ``improve_step`` child cannot be used when it does not change ``function``, the
    function asked for; "" when it does (or the language has no step)."""
    step = _step(language)
    return step.unwritten_step_error(parent, child, function) if step else ""
