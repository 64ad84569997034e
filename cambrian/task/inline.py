"""A task folder made from Python objects, for ``cambrian.run_evolution``: the initial program
from a string (or a file), the evaluator from a Python callable, an evaluator file or a task
folder. Everything an evaluation needs is written into the folder, because evaluations run
contained: in a sandboxed subprocess, on read-only, hash-checked copies of the task's files
(``cambrian/evaluate/``), never in the process that started the run.

A callable evaluator ``f(program_path) -> dict`` (OpenEvolve's shape) is serialised with
cloudpickle into ``evaluator.pkl``, next to a generated ``evaluate.py`` that loads and calls it.
A function of an installed module (standard library, site-packages) is pickled by reference and
imported by name in the evaluation process; any other function (defined in a notebook, a script,
a local module) is pickled by value: its code and what it refers to travel with it. The function
therefore sees only what was pickled with it, never the live objects of the notebook; a module
it imports must be importable in the evaluation process (same Python, same environment), and an
object that cannot be pickled (an open file, a lock, a connection) is refused here with a clear
error (:class:`EvaluatorNotPicklable`)."""

from __future__ import annotations

import contextlib
import inspect
import shutil
import sysconfig
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cambrian.lang.language import Language
from cambrian.lang.languages import language_by_name, language_for_path
from cambrian.task.blocks import END_TOKEN, START_TOKEN, parse_regions

PICKLE_NAME = "evaluator.pkl"
EVALUATOR_NAME = "evaluate.py"
INITIAL_STEM = "initial"
COPY_IGNORED = ("__pycache__", "*.pyc", ".git", "runs")

# The module docstring is the function's own, if it has one: a task folder without a problem
# statement shows its evaluator's docstring to the LLM as the statement.
EVALUATOR_TEMPLATE = '''{docstring}# Evaluator written by cambrian.run_evolution for the Python function {name} (module
# {module}). The function was serialised with cloudpickle into {pickle_name}; it runs here, in
# the contained evaluation process, and sees only what was pickled with it.

import pickle
from pathlib import Path

FUNCTION = {name!r}
_function = None


def evaluate(program_path):
    global _function
    if _function is None:
        try:
            _function = pickle.loads(Path(__file__).with_name({pickle_name!r}).read_bytes())
        except Exception as exc:
            raise RuntimeError(
                f"the evaluator function {{FUNCTION}} cannot be loaded in the evaluation process "
                f"({{type(exc).__name__}}: {{exc}}). It runs in a separate Python process: every "
                "module it uses must be importable there (same Python, same environment)"
            ) from exc
    return _function(program_path)
'''


class EvaluatorNotPicklable(TypeError):
    """A callable evaluator cannot be sent to the evaluation process."""


@dataclass
class InlineTask:
    root: Path
    config: dict[str, Any] = field(default_factory=dict)  # a config layer for the task


def write_inline_task(
    root: Path,
    *,
    initial_code: str | Path | None,
    evaluator: Callable[..., Any] | str | Path,
    language: str | None = None,
    problem: str | None = None,
) -> InlineTask:
    """Write the task folder ``root`` (which must not exist yet); return it with the config
    keys it needs (which file is the initial program, the evaluator)."""
    root = Path(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    task = InlineTask(root)
    if callable(evaluator) and not isinstance(evaluator, (str, Path)):
        payload = pickle_function(evaluator)  # before anything is written
        root.mkdir()
        (root / PICKLE_NAME).write_bytes(payload)
        doc = inspect.getdoc(evaluator)
        (root / EVALUATOR_NAME).write_text(EVALUATOR_TEMPLATE.format(
            docstring=f"{doc!r}\n\n" if doc else "",  # a literal of any quoting is a docstring
            name=_function_name(evaluator), module=getattr(evaluator, "__module__", "?"),
            pickle_name=PICKLE_NAME))
        task.config["task"] = {"evaluator": EVALUATOR_NAME}
    else:
        source = Path(evaluator)
        if source.is_dir():
            shutil.copytree(source, root, ignore=shutil.ignore_patterns(*COPY_IGNORED))
        elif source.is_file():
            root.mkdir()
            shutil.copy2(source, root / source.name)
            task.config["task"] = {"evaluator": source.name}
        else:
            raise FileNotFoundError(f"evaluator {evaluator} is neither a callable, a file nor a "
                                    "task folder")
    if problem is not None:
        (root / "problem.md").write_text(problem)
    if initial_code is not None:
        name = _write_initial(root, initial_code, language)
        task.config.setdefault("task", {})["initial_program"] = name
    if language is not None:
        task.config.setdefault("task", {})["language"] = language
    return task


def _names_a_file(text: str) -> bool:
    """A one-line string naming an existing file is a path (as OpenEvolve's
    ``run_evolution("initial_program.py", ...)`` is called), not a program."""
    line = text.strip()
    if "\n" in line or not line or len(line) > 4096:
        return False
    try:
        return Path(line).expanduser().is_file()
    except OSError:  # e.g. a name too long for the file system: code, not a path
        return False


def _write_initial(root: Path, initial_code: str | Path, language: str | None) -> str:
    if isinstance(initial_code, str) and _names_a_file(initial_code):
        initial_code = Path(initial_code.strip()).expanduser()
    if isinstance(initial_code, Path):
        source = initial_code.read_text()
        lang = language_by_name(language) if language else language_for_path(initial_code)
        suffix = initial_code.suffix or _suffix(lang)
    else:
        source = initial_code
        lang = language_by_name(language or "python")
        suffix = _suffix(lang)
    if not source.strip():
        raise ValueError("the initial program is empty")
    if not parse_regions(source).has_markers:
        warnings.warn(
            f"the initial program has no {START_TOKEN}/{END_TOKEN} markers: they were added "
            "around the whole program, so the LLM may change all of it. Put them around the "
            "part that should evolve to keep the rest fixed.", UserWarning, stacklevel=2)
        source = with_markers(source, lang)
    name = INITIAL_STEM + suffix
    (root / name).write_text(source)
    return name


def with_markers(source: str, language: Language) -> str:
    """``source`` as one EVOLVE-BLOCK."""
    body = source if source.endswith("\n") else source + "\n"
    return f"{language.comment(START_TOKEN)}\n{body}{language.comment(END_TOKEN)}\n"


def _suffix(language: Language) -> str:
    return language.extensions[0] if language.extensions else ".txt"


def _function_name(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", None) or getattr(function, "__name__", None) \
        or type(function).__name__


def _installed(module: Any) -> bool:
    """Whether a fresh interpreter of this environment imports ``module`` by its name: it is
    built in, or its file is in the standard library or site-packages."""
    path = getattr(module, "__file__", None)
    if path is None:
        return True
    roots = {Path(p).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib")
             if (p := sysconfig.get_paths().get(key))}
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(root) for root in roots)


@contextlib.contextmanager
def sent_by_value(function: Callable[..., Any]) -> Iterator[None]:
    """While it lasts, pickling sends ``function``'s module by value when a fresh interpreter
    could not import it (a notebook's, a script's, a test module's)."""
    import cloudpickle

    module = inspect.getmodule(function)
    by_value = (module is not None and module.__name__ != "__main__" and not _installed(module)
                and module.__name__ not in cloudpickle.list_registry_pickle_by_value())
    if by_value:
        cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(module)


def pickle_function(function: Callable[..., Any]) -> bytes:
    """``function`` serialised for the evaluation process (see the module's docstring)."""
    import cloudpickle

    with sent_by_value(function):
        try:
            return cloudpickle.dumps(function)
        except Exception as exc:  # noqa: BLE001 - whatever the pickler refuses
            raise EvaluatorNotPicklable(
                f"the evaluator {_function_name(function)} cannot be sent to the evaluation process: "
                f"cloudpickle could not serialise it ({type(exc).__name__}: {exc}). Evaluations run "
                "in a separate, sandboxed process, so the function must not hold open files, locks, "
                "connections or similar live objects; create those inside the function, or pass an "
                "evaluator file or task folder instead") from None
