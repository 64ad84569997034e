"""A task is a folder: an initial program with EVOLVE-BLOCK markers, an evaluator, and optionally
a problem statement and a ``config.yaml``. Loading it either succeeds completely or fails with a
message that says what is missing or broken and how to fix it.

A folder with a problem statement may leave out the initial program: the LLM then writes the
first one (``cambrian/mutate/first_program.py``), in the language ``task.language`` (or a judged
task's ``judge.language``) names."""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.config import ConfigError, RunConfig, read_config_file
from cambrian.core.python_ast import parse_python
from cambrian.lang.languages import Language, language_by_name, language_for_path
from cambrian.task.blocks import BlockError, parse_regions
from cambrian.task.contracts import detect_contract
from cambrian.task.peer_configs import PeerConfig, find_config_file, read_peer_config
from cambrian.task.program_files import (
    ProgramFile,
    check_relative,
    has_blocks,
    header_path,
    join_files,
)

INITIAL_STEMS = ("initial", "initial_program", "init_program", "main", "solution")
# ShinkaEvolve's variants of one task's first program: initial_open_evolve.py, initial_test_time.py
VARIANT_PREFIX = "initial_"
# ...but not their data: files named initial_* with these suffixes are not programs.
NOT_PROGRAMS = frozenset({".pyc", ".json", ".yaml", ".yml", ".toml", ".ipynb", ".csv", ".npz",
                          ".npy", ".pkl", ".log", ".lock"})
EVALUATOR_NAMES = ("evaluate.py", "evaluator.py")
PROBLEM_NAMES = ("problem.md", "PROBLEM.md", "statement.md", "problem.txt", "README.md")


class TaskError(ValueError):
    """The task folder cannot be used as it is."""


@dataclass(frozen=True)
class Task:
    root: Path
    name: str
    initial_path: Path | None  # None: the LLM writes the first program from the statement
    initial_source: str | None
    language: Language
    evaluator_path: Path
    contract: str
    problem_statement: str | None
    description: str | None
    direction: str
    # Things worth telling the person at the start of a run (a peer's config translated...).
    notes: tuple[str, ...] = ()
    step_score: str | None = None  # the improvement step's score the task gives (its source)
    # A program of several files (``task.files``): their paths inside the task folder, in the
    # order prompts show them, and the entry's (the file the evaluator is given); the initial
    # source is then their bundle (task/program_files.py). Empty for a one-file program.
    program_files: tuple[str, ...] = ()
    entry_file: str | None = None

    @property
    def program_filename(self) -> str:
        """Where the evaluator finds the program (the entry file, for several files)."""
        if self.entry_file is not None:
            return self.entry_file
        if self.initial_path is not None:
            return "program" + self.initial_path.suffix
        return "program" + (self.language.extensions[0] if self.language.extensions else ".txt")

    @property
    def files(self) -> tuple[str, ...]:
        """The program's files, as paths inside the evaluation's folder (one for most tasks)."""
        return self.program_files or (self.program_filename,)

    @property
    def has_initial_program(self) -> bool:
        return self.initial_source is not None

    def file_hashes(self) -> dict[str, str]:
        hashes = {}
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.stat().st_size < 5e7:
                hashes[str(path.relative_to(self.root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        return hashes


def task_config_layer(task_dir: Path) -> dict[str, Any]:
    """The task folder's own config.yaml as a config layer (empty when absent). An OpenEvolve
    or ShinkaEvolve config file is translated (``peer_configs.py``)."""
    path = find_config_file(Path(task_dir))
    if path is None:
        return {}
    peer = read_peer_config(path, Path(task_dir))
    return peer.layer if peer is not None else read_config_file(path)


def peer_config(task_dir: Path) -> PeerConfig | None:
    """The task folder's config file when it is a peer's, with what was translated."""
    path = find_config_file(Path(task_dir))
    return read_peer_config(path, Path(task_dir)) if path is not None else None


def _program_files(root: Path, pattern: str,
                   skip: frozenset[str] = frozenset({".pyc"})) -> list[Path]:
    return sorted(p for p in root.glob(pattern) if p.is_file() and p.suffix not in skip)


def _find_initial(root: Path, configured: str | None, required: bool,
                  notes: list[str] | None = None) -> Path | None:
    """The initial program; None when there is none and none is ``required``.

    After the usual names, a program named ``initial_<variant>.<ext>`` is taken (ShinkaEvolve's
    folders offer several variants, chosen there by a run config): the first by name, the
    others named in ``notes`` with how to choose another."""
    if configured:
        path = root / configured
        if not path.is_file():
            raise TaskError(f"task.initial_program names '{configured}', which is not a file in {root}")
        return path
    for stem in INITIAL_STEMS:
        matches = _program_files(root, f"{stem}.*")
        if matches:
            return matches[0]
    variants = _program_files(root, f"{VARIANT_PREFIX}*.*", NOT_PROGRAMS)
    if variants:
        if len(variants) > 1 and notes is not None:
            others = ", ".join(p.name for p in variants[1:])
            notes.append(f"{len(variants)} initial programs in {root.name}: {variants[0].name} is "
                         f"used ({others} not); set task.initial_program to use another")
        return variants[0]
    if not required:
        return None
    raise TaskError(
        f"no initial program in {root}: expected a file named "
        + " / ".join(f"{s}.<ext>" for s in INITIAL_STEMS)
        + f" / {VARIANT_PREFIX}<variant>.<ext>"
        + " (or set task.initial_program in config.yaml). Without one, add a problem statement "
        "(problem.md) and set task.language: the LLM then writes the first program"
    )


def read_task_text(path: Path, what: str) -> str:
    """A text file of the task folder; one line naming it when it is not UTF-8 text (a binary
    file under a program's or an evaluator's name) or cannot be read."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TaskError(f"{path} ({what}) is not a UTF-8 text file: {exc.reason} at byte "
                        f"{exc.start}") from None
    except OSError as exc:
        raise TaskError(f"cannot read {path} ({what}): {exc.strerror}") from None


def _read_initial(initial: Path) -> str:
    source = read_task_text(initial, "the initial program")
    if not source.strip():
        raise TaskError(f"{initial} is empty")
    try:
        parse_regions(source)
    except BlockError as exc:
        raise TaskError(f"{initial}: {exc}") from None
    return source


def _language(root: Path, config: RunConfig, initial: Path | None) -> Language:
    settings = config.task
    if settings.language:
        try:
            return language_by_name(settings.language)
        except KeyError:
            raise TaskError(f"task.language '{settings.language}' is not a known language") from None
    if initial is not None:
        return language_for_path(initial)
    if config.judge is not None:
        return language_by_name(config.judge.language)
    raise TaskError(
        f"{root} has a problem statement but no initial program, so the LLM will write the first "
        "one; say in which language: set task.language (e.g. python, cpp, rust) in config.yaml"
    )


def _find_evaluator(root: Path, configured: str | None) -> Path:
    names = (configured,) if configured else EVALUATOR_NAMES
    for name in names:
        path = root / name
        if path.is_file():
            return path
    raise TaskError(
        f"no evaluator in {root}: expected {' or '.join(names)} "
        "(a module with evaluate(program_path) -> dict, or a script taking "
        "--program_path and --results_dir that writes metrics.json)"
    )


def _find_problem(root: Path, configured: str | None) -> str | None:
    if configured:
        path = root / configured
        if not path.is_file():
            raise TaskError(f"task.problem_statement names '{configured}', which is not a file in {root}")
        return read_task_text(path, "the problem statement")
    for name in PROBLEM_NAMES:
        path = root / name
        if path.is_file():
            return read_task_text(path, "the problem statement")
    return None


def load_task(task_dir: Path, config: RunConfig) -> Task:
    root = Path(task_dir).resolve()
    if not root.is_dir():
        raise TaskError(f"task folder {task_dir} does not exist or is not a directory")
    settings = config.task
    problem = _find_problem(root, settings.problem_statement)
    has_statement = problem is not None and bool(problem.strip())
    notes: list[str] = []
    program_files: tuple[str, ...] = ()
    if settings.files:
        program_files, entry = _listed_files(root, settings.files, settings.initial_program)
        # Listed by the task's own config: an error; among the default intents it is simply
        # never usable on such a program (mutate/step/intent.py).
        if len(program_files) > 1 and "improve_step" in config.mutation.types \
                and "types" in config.mutation.model_fields_set:
            raise TaskError("mutation.types lists improve_step, which wires a step into a "
                            "one-file program; a program of several files (task.files) "
                            "cannot take it")
        initial: Path | None = root / entry
        source: str | None = _read_program_files(root, program_files)
    else:
        initial = _find_initial(root, settings.initial_program, required=not has_statement,
                                notes=notes)
        source = _read_initial(initial) if initial is not None else None
    language = _language(root, config, initial)

    if config.judge is not None:
        if len(program_files) > 1:
            raise TaskError("a judged task compiles one program file; task.files names "
                            f"{len(program_files)} (use an evaluator that builds them instead)")
        evaluator, contract = _judged_task(root, config), "judge"
    else:
        evaluator, contract = _evaluator_and_contract(root, config)
        # A task paragraph (a peer's system_message or task_sys_msg) says what the task is:
        # the evaluator's docstring, which says less, is then no statement.
        if (problem is None and not settings.description
                and (docstring := _evaluator_docstring(evaluator))):
            problem = docstring
            notes.append(f"no problem statement in {root.name}: the docstring of "
                         f"{evaluator.name} is used as the statement")
    peer = peer_config(root)
    if peer is not None:
        notes.insert(0, peer.note)

    return Task(
        root=root,
        name=settings.name or root.name,
        initial_path=initial,
        initial_source=source,
        language=language,
        evaluator_path=evaluator,
        contract=contract,
        problem_statement=problem,
        description=settings.description,
        direction=settings.direction,
        notes=tuple(notes),
        step_score=_read_step_score(root, config.mutation.improve_score),
        program_files=program_files if len(program_files) > 1 else (),
        entry_file=initial.relative_to(root).as_posix() if program_files else None,
    )


def _listed_files(root: Path, patterns: list[str],
                  entry: str | None) -> tuple[tuple[str, ...], str]:
    """The paths ``task.files`` names (globs expanded, in order, each once) and the entry."""
    found: list[str] = []
    for pattern in patterns:
        try:
            check_relative(pattern.strip("/") if pattern.endswith("/") else pattern)
        except ValueError as exc:
            raise TaskError(f"task.files: {exc}") from None
        matches = (sorted(p for p in root.glob(pattern) if p.is_file())
                   if any(c in pattern for c in "*?[") else [root / pattern])
        if not matches or not all(p.is_file() for p in matches):
            raise TaskError(f"task.files names '{pattern}', which matches no file in {root}")
        for path in matches:
            relative = path.relative_to(root).as_posix()
            if relative not in found and "__pycache__" not in relative:
                found.append(relative)
    if entry is not None and entry not in found:
        raise TaskError(f"task.initial_program '{entry}' must be one of task.files "
                        f"({', '.join(found)})")
    return tuple(found), entry or found[0]


def _read_program_files(root: Path, paths: tuple[str, ...]) -> str:
    """The bundle of a program's files, each checked like an initial program; a program of
    several files marks what may change with EVOLVE-BLOCKs (its other files are fixed)."""
    files = []
    for relative in paths:
        text = read_task_text(root / relative, "a file of task.files")
        try:
            parse_regions(text)
        except BlockError as exc:
            raise TaskError(f"{root / relative}: {exc}") from None
        for number, line in enumerate(text.splitlines(), start=1):
            if header_path(line) is not None:
                raise TaskError(f"{root / relative} line {number} looks like the header line "
                                "that separates a program's files (`==> path <==`); reword it")
        files.append(ProgramFile(relative, text))
    if not any(f.text.strip() for f in files):
        raise TaskError(f"the files of task.files in {root} are empty")
    if len(files) > 1 and not any(has_blocks(f.text) for f in files):
        raise TaskError(
            f"none of task.files ({', '.join(paths)}) has EVOLVE-BLOCK markers: a program of "
            "several files marks what may change with EVOLVE-BLOCK-START/EVOLVE-BLOCK-END "
            "comments (files without them are shown to the model but stay as they are)")
    return join_files(files)


def _read_step_score(root: Path, configured: str | None) -> str | None:
    if configured is None:
        return None
    path = (root / configured).resolve()
    if not path.is_relative_to(root):
        raise TaskError(f"mutation.improve_score names '{configured}', which is outside the task "
                        f"folder {root}")
    if not path.is_file():
        raise TaskError(f"mutation.improve_score names '{configured}', which is not a file in "
                        f"{root}")
    return read_task_text(path, "mutation.improve_score")


def _evaluator_docstring(evaluator: Path) -> str | None:
    """A Python evaluator's module docstring (a folder without README or problem.md)."""
    if evaluator.suffix != ".py":
        return None
    try:
        docstring = ast.get_docstring(parse_python(evaluator.read_text()))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    return docstring.strip() if docstring and docstring.strip() else None


def _judged_task(root: Path, config: RunConfig) -> Path:
    """Check the judge section against the folder; its scorer stands in for the evaluator."""
    from cambrian.config.judge import JudgeConfigError, resolve_judge_task

    assert config.judge is not None
    try:
        resolve_judge_task(root, config.judge, config.task.direction)
    except JudgeConfigError as exc:
        raise TaskError(str(exc)) from None
    return root / config.judge.scorer


def _evaluator_and_contract(root: Path, config: RunConfig) -> tuple[Path, str]:
    evaluator = _find_evaluator(root, config.task.evaluator)
    source = read_task_text(evaluator, "the evaluator")
    try:
        parse_python(source, filename=str(evaluator))
    except SyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno else ""
        raise TaskError(f"{evaluator} has a syntax error{where}: {exc.msg}") from None
    except ValueError as exc:  # null bytes, on Pythons that do not call it a syntax error
        raise TaskError(f"{evaluator} is not Python source: {exc}") from None
    if config.evaluation.contract == "auto":
        try:
            contract = detect_contract(evaluator)
        except ValueError as exc:
            raise TaskError(f"{evaluator}: {exc}") from None
    else:
        contract = config.evaluation.contract
    return evaluator, contract


__all__ = ["ConfigError", "Task", "TaskError", "load_task", "peer_config", "task_config_layer"]
