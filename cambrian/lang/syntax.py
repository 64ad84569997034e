"""The syntax check of a child before it is spent on an evaluation: its language's own
(``Language.syntax_check``, see ``syntax_checks.py`` for the built-in ones)."""

from __future__ import annotations

from cambrian.lang.languages import Language, as_language
from cambrian.lang.syntax_checks import READS_INCLUDES


def check_syntax(source: str, language: Language | str,
                 include_dir: str | None = None) -> str | None:
    """None when ``source`` passes its language's check (or the language has none), else a
    short error message with line numbers; ``include_dir``: the folder of the file, whose
    headers a C or C++ file of a program of several files includes."""
    check = as_language(language).syntax_check
    if check is None:
        return None
    if include_dir is not None and check in READS_INCLUDES:
        return READS_INCLUDES[check](source, include_dir)
    return check(source)
