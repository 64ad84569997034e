"""The programming languages Cambrian knows: file extensions, comment syntax, code-fence tags.

Anything not listed maps to :data:`GENERIC`, which still supports EVOLVE-BLOCK markers (they
accept any common comment syntax) and the ``diff``/``full`` reply formats.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath


@dataclass(frozen=True)
class Language:
    name: str
    extensions: tuple[str, ...]  # lower-case, with the leading dot
    line_comment: str | None
    block_comment: tuple[str, str] | None
    fence_tags: tuple[str, ...]  # first one is what Cambrian writes; all are accepted

    @property
    def fence_tag(self) -> str:
        """The tag Cambrian puts after ``` (empty for the generic language)."""
        return self.fence_tags[0] if self.fence_tags else ""

    def comment(self, text: str) -> str:
        """``text`` as a one-line comment in this language."""
        if self.line_comment:
            return f"{self.line_comment} {text}"
        if self.block_comment:
            opener, closer = self.block_comment
            return f"{opener} {text} {closer}"
        return f"# {text}"


PYTHON = Language("python", (".py", ".pyi", ".pyw"), "#", None, ("python", "py", "python3"))
CPP = Language(
    "cpp",
    (".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++"),
    "//",
    ("/*", "*/"),
    ("cpp", "c++", "cc", "cxx", "hpp"),
)
C = Language("c", (".c", ".h"), "//", ("/*", "*/"), ("c", "h"))
RUST = Language("rust", (".rs",), "//", ("/*", "*/"), ("rust", "rs"))
JAVASCRIPT = Language(
    "javascript", (".js", ".mjs", ".cjs", ".jsx"), "//", ("/*", "*/"), ("javascript", "js", "jsx", "node")
)
TYPESCRIPT = Language(
    "typescript", (".ts", ".tsx", ".mts", ".cts"), "//", ("/*", "*/"), ("typescript", "ts", "tsx")
)
GO = Language("go", (".go",), "//", ("/*", "*/"), ("go", "golang"))
JULIA = Language("julia", (".jl",), "#", ("#=", "=#"), ("julia", "jl"))
LUA = Language("lua", (".lua",), "--", ("--[[", "]]"), ("lua",))
SHELL = Language("shell", (".sh", ".bash", ".zsh"), "#", None, ("bash", "sh", "shell", "zsh"))
GENERIC = Language("generic", (), "#", None, ())

LANGUAGES: tuple[Language, ...] = (
    PYTHON, CPP, C, RUST, JAVASCRIPT, TYPESCRIPT, GO, JULIA, LUA, SHELL, GENERIC
)

_BY_EXTENSION = {ext: lang for lang in LANGUAGES for ext in lang.extensions}
_BY_NAME = {alias: lang for lang in LANGUAGES for alias in (lang.name, *lang.fence_tags)}


def language_for_path(path: str | PurePath) -> Language:
    """The language of a file, from its extension; :data:`GENERIC` when unknown."""
    return _BY_EXTENSION.get(PurePath(path).suffix.lower(), GENERIC)


def language_by_name(name: str) -> Language:
    """Look a language up by name or fence tag (``"cpp"``, ``"c++"``, ``"py"``...).

    Raises ``KeyError`` (with the known names) for an unknown name.
    """
    language = _BY_NAME.get(name.strip().lower())
    if language is None:
        known = ", ".join(lang.name for lang in LANGUAGES)
        raise KeyError(f"unknown language {name!r}; known languages: {known}")
    return language


def as_language(language: Language | str) -> Language:
    """Accept either a :class:`Language` or its name."""
    return language if isinstance(language, Language) else language_by_name(language)


def language_for_fence_tag(tag: str) -> Language | None:
    """The language a code-fence tag names, or None for an empty/unknown tag."""
    return _BY_NAME.get(tag.strip().lower()) if tag.strip() else None
