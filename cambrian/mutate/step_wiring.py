"""The improvement step of a program in its language: Python (``improve_step.py``) or C++
(``improve_step_cpp.py``); other languages have none."""

from __future__ import annotations

from cambrian.lang.language import Language
from cambrian.mutate import improve_step, improve_step_cpp
from cambrian.mutate.improve_step import Scaffold

STEP_LANGUAGES = frozenset({"python", "cpp"})


def scaffold(source: str, language: Language | str) -> Scaffold | None:
    """``source`` with an improvement step wired after its entry function, or None."""
    name = language if isinstance(language, str) else language.name
    if name == "python":
        return improve_step.scaffold(source)
    if name == "cpp":
        return improve_step_cpp.cpp_scaffold(source)
    return None


def step_instruction(scaffold_: Scaffold, function: str, move: str) -> str:
    if scaffold_.language == "cpp":
        return improve_step_cpp.cpp_step_instruction(scaffold_, function, move)
    return improve_step.step_instruction(scaffold_, function, move)


def step_contract_error(source: str, language: Language) -> str:
    """Why a child breaks its step's contract before it runs ("" when it keeps it)."""
    if language.name == "python":
        return improve_step.step_contract_error(source)
    return improve_step_cpp.cpp_contract_error(source) if language.name == "cpp" else ""


def unwritten_step_error(parent: str, child: str, function: str, language: Language) -> str:
    """Why an ``improve_step`` child cannot be used when it does not change ``function``, the
    function asked for; "" when it does (or the language has no step)."""
    if language.name == "python":
        return improve_step.unwritten_step_error(parent, child, function)
    if language.name != "cpp":
        return ""
    written = improve_step_cpp.cpp_function_text(child, function)
    if written is not None and written != improve_step_cpp.cpp_function_text(parent, function):
        return ""
    return improve_step.unwritten_message(function)
