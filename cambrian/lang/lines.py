"""Line-level views of program sources shared by the static and cycling analyses.

A source is compared line by line after one normalisation: trailing whitespace is stripped.
Blank lines and lines without a single word character (braces, brackets, lone punctuation) are
never counted as added or deleted, because they re-appear in any edit and would swamp the
re-introduction share (seed 001 §5.2).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

from cambrian.lang.languages import GENERIC, Language, language_by_name

_WORD = re.compile(r"\w")
_WHITESPACE = re.compile(r"\s+")
# A numeric literal not glued to an identifier: 3, 0.5, .5, 1e-6, 0x1F, 1_000, 10.0f, 42u.
NUMBER = re.compile(
    r"(?<![\w.])(?:0[xX][0-9a-fA-F_]+|(?:\d[\d_]*\.\d*|\.\d+|\d[\d_]*)(?:[eE][-+]?\d+)?)"
    r"[fFlLuU]*(?![\w.])"
)
NUMBER_PLACEHOLDER = "#"


def normalise(line: str) -> str:
    return line.rstrip()


def is_counted(line: str) -> bool:
    """False for blank lines and lines that are only braces or punctuation."""
    return _WORD.search(line) is not None


def normalised_lines(source: str) -> list[str]:
    return [line.rstrip() for line in source.splitlines()]  # normalise(), inlined: hot


@dataclass(frozen=True)
class LineDiff:
    """Counted lines removed from the parent and added in the child, in file order."""

    deleted: tuple[str, ...]
    added: tuple[str, ...]


@lru_cache(maxsize=8192)
def line_diff(parent_source: str, child_source: str) -> LineDiff:
    """difflib diff of two sources over normalised lines.

    The common head and tail are cut off first: most edits are local, and this keeps
    SequenceMatcher's quadratic worst case to the changed middle.
    """
    old = normalised_lines(parent_source)
    new = normalised_lines(child_source)
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_mid = old[head:len(old) - tail]
    new_mid = new[head:len(new) - tail]
    deleted: list[str] = []
    added: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            deleted.extend(line for line in old_mid[i1:i2] if is_counted(line))
        if tag in ("insert", "replace"):
            added.extend(line for line in new_mid[j1:j2] if is_counted(line))
    return LineDiff(tuple(deleted), tuple(added))


# ---------------------------------------------------------------------------- comments


def language_named(name: str | None) -> Language:
    if not name:
        return GENERIC
    try:
        return language_by_name(name)
    except KeyError:
        return GENERIC


def _comment_start(line: str, language: Language) -> int:
    """Index where a comment starts on this line (outside string literals), or -1."""
    markers = [m for m in (language.line_comment,
                           language.block_comment[0] if language.block_comment else None) if m]
    if not any(marker in line for marker in markers):
        return -1
    quote: str | None = None
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == "\\":
                index += 2
                continue
            if char == quote:
                quote = None
        elif char in ("'", '"'):
            quote = char
        else:
            for marker in markers:
                if line.startswith(marker, index):
                    return index
        index += 1
    return -1


def is_comment_only(line: str, language: Language) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    if language.block_comment and (stripped == "*" or stripped.startswith(
            ("* ", language.block_comment[1]))):
        return True  # continuation or end of a /* ... */ block
    return _comment_start(stripped, language) == 0


def code_part(line: str, language: Language) -> str:
    """The line without its trailing comment (a comment-only line keeps its text)."""
    if is_comment_only(line, language):
        return line
    start = _comment_start(line, language)
    return line if start < 0 else line[:start]


def loose_key(line: str, language: Language) -> str:
    """The line with its trailing comment and all whitespace removed."""
    return _WHITESPACE.sub("", code_part(line, language))


def skeleton(line: str, language: Language) -> str:
    """The loose key with every numeric literal collapsed to one placeholder."""
    return NUMBER.sub(NUMBER_PLACEHOLDER, loose_key(line, language))


@lru_cache(maxsize=16)
def _line_facts_of(language: Language):  # type: ignore[no-untyped-def]
    """The cached line-facts function of one language (keyed by the line alone: hashing the
    language object for every line of every program cost more than the facts)."""

    @lru_cache(maxsize=65536)
    def facts(line: str) -> tuple[bool, int]:
        """(is a line of code, numeric literals in its code part) — programs of one run share
        most of their lines, so this is cached per distinct line."""
        if not line.strip() or is_comment_only(line, language):
            return False, 0
        return True, len(NUMBER.findall(code_part(line, language)))

    return facts


def _line_facts(line: str, language: Language) -> tuple[bool, int]:
    return _line_facts_of(language)(line)  # type: ignore[no-any-return]


def numeric_literal_count(source: str, language: Language) -> int:
    """Numeric literals in code (comment text excluded)."""
    facts = _line_facts_of(language)
    return sum(facts(line)[1] for line in source.splitlines())


def lines_of_code(source: str, language: Language) -> int:
    """Non-blank lines that are not comment-only."""
    facts = _line_facts_of(language)
    return sum(facts(line)[0] for line in source.splitlines())
