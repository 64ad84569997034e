"""The improvement step of a program in its language: each language's half (``python.py``,
``cpp.py``) offers the same five functions (entry_function, scaffold, step_instruction,
step_contract_error, unwritten_step_error) and is registered here under the language's name;
other languages have none.

A task may give the step's score itself (``mutation.improve_score``: a file holding the
function, written by the task's author as a judged task's scorer is). The step is then wired
with that score in place of the stub, and its proposals ask the model for the move only."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import ModuleType

from cambrian.core.registry import Registry
from cambrian.lang.definitions import find_definitions
from cambrian.lang.language import Language
from cambrian.lang.languages import as_language
from cambrian.lang.syntax import check_syntax
from cambrian.mutate.step import cpp, python
from cambrian.mutate.step.python import Scaffold
from cambrian.store.store import Store

INITIAL_CANDIDATE = 1  # the run's initial program (or the first one the model wrote)
WRITTEN_BY_LLM = "written_by_llm"  # its note when the model wrote it (search/prelude.py sets it)

STEP_LANGUAGES: Registry[ModuleType] = Registry("improvement-step language")
STEP_LANGUAGES.register("python", python)
STEP_LANGUAGES.register("cpp", cpp)


def _step(language: Language | str) -> ModuleType | None:
    return STEP_LANGUAGES.find(language if isinstance(language, str) else language.name)


def _normalised(text: str) -> str:
    return " ".join(text.split())


def definition_text(source: str, name: str, language: Language) -> str | None:
    """``name``'s top-level definition as written (None when the source has none)."""
    try:
        definitions = find_definitions(source, language, top_level_only=True)
    except SyntaxError:
        return None
    lines = source.split("\n")
    return next(("\n".join(lines[d.start:d.end]) for d in definitions if d.name == name), None)


def with_definition(source: str, name: str, text: str, language: Language) -> str:
    """``source`` with ``name``'s top-level definition replaced by ``text``."""
    lines = source.split("\n")
    definition = next(d for d in find_definitions(source, language, top_level_only=True)
                      if d.name == name)
    lines[definition.start:definition.end] = text.strip("\n").split("\n")
    return "\n".join(lines)


def given_score_name(text: str, language: Language | str) -> str:
    """The name of the score function a task gives; ValueError saying what is wrong when
    ``text`` is not one definition of a ``score_<entry>`` function."""
    language = as_language(language)
    try:
        definitions = find_definitions(text, language, top_level_only=True)
    except SyntaxError as error:
        raise ValueError(f"it does not parse as {language.name}: {error}") from error
    names = [d.name for d in definitions]
    if len(names) != 1 or not names[0].startswith(python.SCORE_PREFIX):
        raise ValueError(f"it must define exactly one function named "
                         f"{python.SCORE_PREFIX}<entry>; it defines {names or 'none'}")
    return names[0]


def given_score_error(source: str | None, given: str, language: Language | str) -> str:
    """Why the task's score ``given`` cannot be wired to its initial program ``source`` (None
    when the model writes the first program); "" when it can."""
    if _step(language) is None:
        return (f"mutation.improve_score: {as_language(language).name} programs have no "
                "improvement step (Python and C++ do)")
    try:
        name = given_score_name(given, language)
    except ValueError as error:
        return f"mutation.improve_score: {error}"
    if source is None:
        return ""
    wired = scaffold(source, language)
    if wired is None:
        return ("mutation.improve_score: the initial program has no entry function the "
                "improvement step can be wired to")
    if wired.score != name:
        return (f"mutation.improve_score defines {name}, but the initial program's step scores "
                f"with {wired.score}")
    with_score = scaffold(source, language, given)
    if with_score is None or with_score.score not in with_score.given:
        return (f"mutation.improve_score: the step cannot take {name} as written (it must be a "
                "plain function: no default parameters, templates or trailing return type)")
    error = check_syntax(with_score.source, language)
    if error:
        return (f"mutation.improve_score: the initial program with this score wired in does not "
                f"compile (lines of the wired program): {error}")
    return ""


def entry_function(source: str, language: Language | str) -> str | None:
    """The function of ``source``'s EVOLVE-BLOCKs the rest of the program (or the evaluator)
    runs, where the language has a step; what a run passes as ``entry`` below, found once on
    its initial program."""
    step = _step(language)
    return step.entry_function(source) if step else None


@dataclass
class InitialEntry:
    """The run's step entry: the entry function of the initial program the task gives, which
    its evaluator runs, found once that program is in the store; None before, where it has
    none, or where the model wrote the first program (whose entry may be a wrapper nothing
    runs: each parent's own entry is taken then)."""

    store: Store
    language: Language | str
    _found: list[str | None] = field(default_factory=list, init=False, repr=False,
                                     compare=False)

    def __call__(self) -> str | None:
        if not self._found:
            initial = self.store.candidates.find(INITIAL_CANDIDATE)
            if initial is None:
                return None
            given = None if initial.notes.get(WRITTEN_BY_LLM) else initial.source
            self._found.append(entry_function(given, self.language) if given else None)
        return self._found[0]


def scaffold(source: str, language: Language | str, given_score: str | None = None,
             entry: str | None = None) -> Scaffold | None:
    """``source`` with an improvement step wired after its entry function, or None. With
    ``given_score`` (the task's score function) the score stub is that function, and the score
    is marked given while the program keeps it as the task wrote it. ``entry``: the initial
    program's entry function, taken while ``source`` defines it (a child that added a wrapper
    nothing calls had its step wired to that wrapper, which the evaluator never ran)."""
    step = _step(language)
    wired = step.scaffold(source, entry) if step else None
    if wired is None or given_score is None:
        return wired
    language = as_language(language)
    if wired.score in wired.stubs:
        wired = step.scaffold(with_definition(wired.source, wired.score, given_score, language),
                              entry)
        if wired is None:
            return None
    written = definition_text(wired.source, wired.score, language)
    given = definition_text(given_score, wired.score, language)
    if written is not None and given is not None and _normalised(written) == _normalised(given):
        return replace(wired, given=frozenset({wired.score}))
    return wired


def step_instruction(scaffold_: Scaffold, function: str, move: str) -> str:
    return STEP_LANGUAGES.get(scaffold_.language).step_instruction(scaffold_, function, move)


def step_contract_error(source: str, language: Language, entry: str | None = None) -> str:
    """Why a child breaks its step's contract before it runs ("" when it keeps it); ``entry``
    as in ``scaffold``."""
    step = _step(language)
    return step.step_contract_error(source, entry) if step else ""


def entry_of(step_function: str) -> str | None:
    """The entry function whose step ``step_function`` (``score_<entry>`` or
    ``change_<entry>``, as a step proposal names it) belongs to; None for another name."""
    for prefix in (python.SCORE_PREFIX, python.CHANGE_PREFIX):
        if step_function.startswith(prefix) and len(step_function) > len(prefix):
            return step_function[len(prefix):]
    return None


def unwritten_step_error(parent: str, child: str, function: str, language: Language) -> str:
    """Why an ``improve_step`` child cannot be used when it does not change ``function``, the
    function asked for; "" when it does (or the language has no step)."""
    step = _step(language)
    return step.unwritten_step_error(parent, child, function) if step else ""
