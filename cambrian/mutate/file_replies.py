"""A reply to a program of several files: which part of it is meant for which file.

A reply names a file on a line of its own (``schedule/order.py``; also written as a heading,
in backticks, after ``File:``, or in a code fence's info string) before the edits or the code
block meant for it. The reply is cut at those lines into sections; a named section is applied,
in the reply's format, to its file alone; what comes before the first name (if it holds code)
is applied to the whole program text, where a SEARCH that matches in one file only, or a
function defined in one file only, finds its file by itself. A one-file program never names
files: the whole reply is its one section, exactly as before files existed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cambrian.lang.definitions import find_definitions
from cambrian.lang.languages import Language
from cambrian.mutate.patch_types import PatchError
from cambrian.mutate.reply_text import fences_for_language, find_fences, is_fence_line
from cambrian.task.blocks import BlockError, line_text, parse_regions, split_lines
from cambrian.task.program_files import (
    file_language,
    has_blocks,
    header_path,
    mutable_paths,
    replace_file,
    split_files,
)

_SEARCH = re.compile(r"^[ \t]*<{5,9}[ \t]*SEARCH[ \t]*$")
_REPLACE = re.compile(r"^[ \t]*>{5,9}[ \t]*REPLACE[ \t]*$")
_FENCE_INFO = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*(?P<info>[^`]*)$")
_LABEL = re.compile(r"^(file|path|filename)\s*[:=]\s*", re.IGNORECASE)

ApplyText = Callable[[str, str, Language], tuple[str, int, list[str]]]


@dataclass(frozen=True)
class ReplySection:
    path: str | None  # the file it is meant for; None before the first named file
    text: str


def named_file(line: str, paths: Sequence[str]) -> str | None:
    """The path of ``paths`` that a reply line names on its own, else None."""
    text = line_text(line).strip()
    if not text or len(text) > 300:
        return None
    if (header := header_path(text)) is not None:
        text = header
    text = text.strip("#*>-/ \t").strip()
    text = _LABEL.sub("", text).strip().strip("`*'\"").rstrip(":").strip()
    if text.startswith("==>") and text.endswith("<=="):
        text = text[3:-3].strip()
    if text in paths:
        return text
    by_name = [p for p in paths if p.rsplit("/", 1)[-1] == text]
    return by_name[0] if len(by_name) == 1 else None


def _fence_names(line: str, paths: Sequence[str]) -> str | None:
    """The path an opening fence's info string names (```python schedule/order.py)."""
    opened = _FENCE_INFO.match(line_text(line))
    if opened is None:
        return None
    for word in opened["info"].split():
        if (path := named_file(word, paths)) is not None:
            return path
    return None


def reply_sections(reply: str, paths: Sequence[str]) -> list[ReplySection]:
    """``reply`` cut at the lines naming one of ``paths`` (never inside a code block or an
    edit); with no paths, one unnamed section holding all of it."""
    if not paths:
        return [ReplySection(None, reply)]
    sections: list[ReplySection] = []
    current: str | None = None
    lines: list[str] = []
    in_fence = in_edit = False
    for line in split_lines(reply):
        text = line_text(line)
        named = None
        if not in_fence and not in_edit:
            named = named_file(line, paths)
            if named is None and is_fence_line(line):
                named = _fence_names(line, paths)
                if named is not None:  # the fence opens the named file's section
                    sections.append(ReplySection(current, "".join(lines)))
                    current, lines = named, []
                    named = None
        if named is not None:
            sections.append(ReplySection(current, "".join(lines)))
            current, lines = named, []
            continue
        lines.append(line)
        if _SEARCH.match(text) and not in_fence:
            in_edit = True
        elif _REPLACE.match(text) and not in_fence:
            in_edit = False
        elif is_fence_line(line) and not in_edit:
            in_fence = not in_fence
    sections.append(ReplySection(current, "".join(lines)))
    return [s for s in sections if s.path is not None or s.text.strip()]


def _holds_code(text: str) -> bool:
    return any(is_fence_line(line) or _SEARCH.match(line_text(line))
               for line in split_lines(text))


def without_file_lines(reply: str, source: str) -> str:
    """``reply`` without the lines that name a file of ``source`` (what the description is
    read from)."""
    paths = [f.path for f in split_files(source)] if len(split_files(source)) > 1 else []
    if not paths:
        return reply
    return "".join(line for line in split_lines(reply) if named_file(line, paths) is None)


def _misplaced_functions(section: str, path: str, source: str, language: Language) -> bool:
    """Whether a function reply's part names a file that defines none of its functions while
    the program defines them all elsewhere (the 1.5B sends a header's function under the
    source's path): the part is then applied to the whole program, where each function finds
    its own file."""
    try:
        sent = {d.name for fence in fences_for_language(find_fences(section), language)
                for d in find_definitions(fence.body, language, top_level_only=True)}
        everywhere = {d.name for d in find_definitions(source, language, top_level_only=False)}
        here = {d.name for d in find_definitions(file_text(source, path), language,
                                                 top_level_only=False)}
    except (SyntaxError, ValueError, PatchError):
        return False
    return bool(sent) and sent <= everywhere and not sent <= here


def apply_to_files(apply: ApplyText, parent_source: str, reply: str, language: Language,
                   by_name: bool = False) -> tuple[str, int, list[str]]:
    """The child of ``parent_source`` that ``reply`` describes, each section applied by
    ``apply`` (a format's ``apply``) to its file, or to the whole program when unnamed
    (``by_name``: the format replaces functions by name, so a part whose functions all live
    in other files goes to the whole program too)."""
    files = split_files(parent_source)
    paths = [f.path for f in files] if len(files) > 1 else []
    sections = reply_sections(reply, paths)
    if not any(s.path is not None or _holds_code(s.text) for s in sections):
        return apply(parent_source, reply, language)  # the format says what is missing
    mutable = set(mutable_paths(files))
    source, edits, notes = parent_source, 0, []
    for section in sections:
        if section.path is None:
            if paths and not _holds_code(section.text):
                continue  # the description, or prose between the files' parts
            source, count, said = apply(source, section.text, language)
            edits += count
            notes.extend(said)
            continue
        if section.path not in mutable:
            raise PatchError(
                f"{section.path} has no EVOLVE-BLOCK, so it cannot change; the files that can "
                f"are {', '.join(sorted(mutable))}.")
        if by_name and _misplaced_functions(section.text, section.path, source, language):
            source, count, said = apply(source, section.text, language)
            edits += count
            notes.append(f"the functions sent under {section.path} were put where the "
                         "program defines them")
            notes.extend(said)
            continue
        text = next(f.text for f in split_files(source) if f.path == section.path)
        try:
            changed, count, said = apply(text, section.text,
                                         file_language(section.path, language))
        except PatchError as exc:
            raise PatchError(f"in {section.path}: {exc.message}", truncated=exc.truncated,
                             kind=exc.kind) from None
        source = replace_file(source, section.path, changed)
        edits += count
        notes.extend(f"{section.path}: {note}" for note in said)
    if paths and [f.path for f in split_files(source)] != paths:
        raise PatchError("the reply added a line that looks like a file header "
                         "(`==> path <==`); keep the files as they are and change their code")
    return source, edits, notes


def reply_shape(source: str) -> tuple[int, tuple[str, ...]]:
    """(EVOLVE-BLOCKs per file the reply format is told of, the files a reply names): for a
    one-file program its block count and no files; for several files, the count each file
    that can change has (0 when they differ) and their paths."""
    files = split_files(source)
    if len(files) == 1:
        return _block_count(source), ()
    mutable = [f for f in files if has_blocks(f.text)]
    counts = {_block_count(f.text) for f in mutable}
    return (counts.pop() if len(counts) == 1 else 0), tuple(f.path for f in mutable)


def _block_count(text: str) -> int:
    """A text's EVOLVE-BLOCKs (0 without markers or with broken ones)."""
    try:
        regions = parse_regions(text)
    except BlockError:
        return 0
    return len(regions.blocks) if regions.has_markers else 0


def file_text(source: str, path: str) -> str:
    """The text of one file of a program (a one-file program's text for its path)."""
    files = split_files(source, path)
    return next((f.text for f in files if f.path == path), files[0].text if len(files) == 1
                else "")


__all__ = ["ReplySection", "apply_to_files", "file_text", "named_file", "reply_sections",
           "reply_shape", "without_file_lines"]
