"""The child checks that read one file's code, run on each file a reply changed: Python repairs,
the "changes nothing that runs" check, the syntax check (a C/C++ file sees the other files of
its program, which it may include) and undefined names. A one-file program is its one file, so
each check is the one it always was."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cambrian.lang.languages import Language
from cambrian.lang.syntax import check_syntax
from cambrian.mutate.dead_code import behaviour_unchanged
from cambrian.mutate.python_repairs import repair_python_child
from cambrian.mutate.undefined_names import undefined_names_error
from cambrian.task.program_files import (
    changed_paths,
    file_language,
    replace_file,
    split_files,
    write_program,
)


def _changed(parent: str, child: str, language: Language) -> list[tuple[str, str, str, Language]]:
    """(path, parent text, child text, language) of each file that differs ("" for the path of
    a one-file program)."""
    before = {f.path: f.text for f in split_files(parent)}
    after = {f.path: f.text for f in split_files(child)}
    return [(path, before.get(path, ""), after[path],
             file_language(path, language) if path else language)
            for path in changed_paths(parent, child)]


def _label(path: str, message: str) -> str:
    return f"{path}: {message}" if path else message


def repair_files(parent: str, child: str, language: Language) -> tuple[str, dict[str, Any]]:
    """The child with each changed Python file repaired (``python_repairs.py``), and what was
    repaired (for several files, by path)."""
    repairs: dict[str, Any] = {}
    for path, before, after, lang in _changed(parent, child, language):
        if lang.name != "python":
            continue
        fixed, done = repair_python_child(before, after)
        if done:
            child = replace_file(child, path, fixed)
            repairs.update({path: done} if path else done)
    return child, repairs


def behaviour_unchanged_files(parent: str, child: str, language: Language, *,
                              new_method_asked: bool) -> str:
    """Why the child behaves as its parent, when every changed file is Python and none of them
    changes what runs; "" otherwise."""
    changed = _changed(parent, child, language)
    if not changed or any(lang.name != "python" for *_, lang in changed):
        return ""
    reasons = [behaviour_unchanged(before, after, new_method_asked=new_method_asked)
               for _, before, after, _ in changed]
    return reasons[0] if all(reasons) else ""


def _first(checks: list[tuple[str, Callable[[], str | None]]]) -> str | None:
    for path, check in checks:
        if error := check():
            return _label(path, error)
    return None


def syntax_error_files(parent: str, child: str, language: Language) -> str | None:
    """The first syntax error of a changed file (a file of several, checked beside the others,
    so that a C/C++ file finds the headers it includes); None when they all pass."""
    changed = _changed(parent, child, language)
    if len(split_files(child)) == 1:
        return check_syntax(child, language)
    with tempfile.TemporaryDirectory(prefix="cambrian-files-") as folder:
        write_program(Path(folder), child, split_files(child)[0].path)
        return _first([(path, lambda text=after, lang=lang, path=path: check_syntax(
            text, lang, include_dir=str(Path(folder, path).parent)))
            for path, _, after, lang in changed])


def undefined_names_files(parent: str, child: str, language: Language) -> str:
    """The first name a changed Python file uses and nothing binds ("" when none)."""
    return _first([(path, lambda before=before, after=after: undefined_names_error(before, after))
                   for path, before, after, lang in _changed(parent, child, language)
                   if lang.name == "python"]) or ""


__all__ = ["behaviour_unchanged_files", "repair_files", "syntax_error_files",
           "undefined_names_files"]
