"""The syntax check of a child before it is spent on an evaluation: its language's own
(``Language.syntax_check``, see ``syntax_checks.py`` for the built-in ones)."""

from __future__ import annotations

from cambrian.lang.languages import Language, as_language


def check_syntax(source: str, language: Language | str) -> str | None:
    """None when ``source`` passes its language's check (or the language has none), else a
    short error message with line numbers."""
    check = as_language(language).syntax_check
    return check(source) if check is not None else None
