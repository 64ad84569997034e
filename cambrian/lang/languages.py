"""The registry of languages: a language is one :class:`Language` object (``language.py``);
the built-in ones are in ``builtin.py``, and a plugin module adds one with
:func:`register_language`. Lookups by file extension, name or code-fence tag."""

from __future__ import annotations

from pathlib import PurePath

from cambrian.lang.builtin import (
    BUILTIN_LANGUAGES,
    CPP,
    GENERIC,
    GO,
    JAVASCRIPT,
    JSON,
    JULIA,
    LUA,
    MARKDOWN,
    PYTHON,
    RUST,
    SHELL,
    TEXT,
    TYPESCRIPT,
    YAML,
    C,
)
from cambrian.lang.language import Language

__all__ = ["C", "CPP", "GENERIC", "GO", "JAVASCRIPT", "JSON", "JULIA", "LUA", "LANGUAGES",
           "Language", "MARKDOWN", "PYTHON", "RUST", "SHELL", "TEXT", "TYPESCRIPT", "YAML",
           "as_language", "language_by_name",
           "language_for_fence_tag", "language_for_path", "register_language",
           "registered_languages"]

_REGISTERED: list[Language] = []
_BY_EXTENSION: dict[str, Language] = {}
_BY_NAME: dict[str, Language] = {}


def register_language(language: Language) -> Language:
    """Make ``language`` known by its name, fence tags and file extensions (a later
    registration of a name or extension replaces the earlier one)."""
    _REGISTERED[:] = [lang for lang in _REGISTERED if lang.name != language.name] + [language]
    for extension in language.extensions:
        _BY_EXTENSION[extension.lower()] = language
    for alias in (language.name, *language.fence_tags):
        _BY_NAME[alias.lower()] = language
    return language


def registered_languages() -> tuple[Language, ...]:
    return tuple(_REGISTERED)


for _language in BUILTIN_LANGUAGES:
    register_language(_language)
LANGUAGES = BUILTIN_LANGUAGES  # the built-in ones; registered_languages() has plugins' too


def language_for_path(path: str | PurePath) -> Language:
    """The language of a file, from its extension; :data:`GENERIC` when unknown."""
    return _BY_EXTENSION.get(PurePath(path).suffix.lower(), GENERIC)


def language_by_name(name: str) -> Language:
    """Look a language up by name or fence tag (``"cpp"``, ``"c++"``, ``"py"``...).

    Raises ``KeyError`` (with the known names) for an unknown name.
    """
    language = _BY_NAME.get(name.strip().lower())
    if language is None:
        known = ", ".join(lang.name for lang in _REGISTERED)
        raise KeyError(f"unknown language {name!r}; known languages: {known}")
    return language


def as_language(language: Language | str) -> Language:
    """Accept either a :class:`Language` or its name."""
    return language if isinstance(language, Language) else language_by_name(language)


def language_for_fence_tag(tag: str) -> Language | None:
    """The language a code-fence tag names, or None for an empty/unknown tag."""
    return _BY_NAME.get(tag.strip().lower()) if tag.strip() else None
