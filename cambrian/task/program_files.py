"""A program of several files as one text, and back.

A candidate's program is one text everywhere in the loop (prompts, patches, EVOLVE-BLOCK checks,
duplicates, novelty, merges): a program of one file is that file's text; a program of several
files is their texts one after the other, each under a header line naming its path, written as
a comment of the file's language::

    # ==> pkg/geometry.py <==
    ...
    # ==> pkg/solver.py <==
    ...

Since every header is a comment and no EVOLVE-BLOCK spans two files, what reads a program as
one text reads a bundle the same way: its blocks are the blocks of all its files, in order, and
the header lines and the files without blocks lie outside them, so they never change. The files
are split out again where files matter: evaluation (each written at its path), the store (each
text kept once), the prompt (each file shown under its path), ``cambrian best`` and the web UI.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cambrian.lang.languages import Language, language_for_path
from cambrian.task.blocks import BlockError, parse_regions, split_lines

_HEADER = re.compile(r"^==> (?P<path>\S(?:.*\S)?) <==$")
# Comment syntaxes a header may be written in (the comment of the file's language).
_OPENERS = ("//", "#", "--", ";", "%", "!")
_WRAPPED = (("/*", "*/"), ("<!--", "-->"), ("(*", "*)"), ("{-", "-}"), ("#=", "=#"),
            ("--[[", "]]"))


@dataclass(frozen=True)
class ProgramFile:
    path: str  # relative, "/"-separated, as the evaluation sees it
    text: str


def header_line(path: str) -> str:
    """The line that opens ``path`` in a bundle (a comment of its language, with "\\n"; a
    ``#`` comment for a file whose language has none, plain text or JSON: the header is never
    written into the file)."""
    language = language_for_path(path)
    text = f"==> {path} <=="
    has_comments = language.line_comment or language.block_comment
    return (language.comment(text) if has_comments else f"# {text}") + "\n"


def header_path(line: str) -> str | None:
    """The path a bundle's header line names, or None when ``line`` is no header."""
    text = line.strip()
    for opener, closer in _WRAPPED:
        if text.startswith(opener) and text.endswith(closer):
            text = text[len(opener): len(text) - len(closer)].strip()
            break
    else:
        for opener in _OPENERS:
            if text.startswith(opener):
                text = text[len(opener):].strip()
                break
        else:
            return None
    match = _HEADER.match(text)
    return match.group("path") if match else None


def _ended(text: str) -> str:
    return text if text.endswith("\n") or not text else text + "\n"


def join_files(files: Sequence[ProgramFile]) -> str:
    """The program text of ``files``: a single file's own text; several, each under its
    header (a file's text gets a final newline, so the next header starts a line)."""
    if len(files) == 1:
        return files[0].text
    return "".join(header_line(f.path) + _ended(f.text) for f in files)


def is_bundle(source: str) -> bool:
    """Whether ``source`` is a program of several files (it opens with a header line)."""
    first = source.split("\n", 1)[0]
    return header_path(first) is not None


def split_files(source: str, single_path: str = "") -> list[ProgramFile]:
    """The files of a program text; a text that is no bundle is one file at ``single_path``."""
    if not is_bundle(source):
        return [ProgramFile(single_path, source)]
    files: list[ProgramFile] = []
    path: str | None = None
    lines: list[str] = []
    for line in split_lines(source):
        named = header_path(line)
        if named is not None:
            if path is not None:
                files.append(ProgramFile(path, "".join(lines)))
            path, lines = named, []
        else:
            lines.append(line)
    if path is not None:
        files.append(ProgramFile(path, "".join(lines)))
    return files


def file_paths(source: str) -> tuple[str, ...]:
    """The paths of a bundle's files (empty for a one-file program)."""
    return tuple(f.path for f in split_files(source)) if is_bundle(source) else ()


def file_language(path: str, default: Language) -> Language:
    """The language of one file of a program: by its extension, else the task's."""
    found = language_for_path(path)
    return default if found.name == "generic" else found


def has_blocks(text: str) -> bool:
    """Whether a file carries EVOLVE-BLOCK markers (broken markers count as none)."""
    try:
        return parse_regions(text).has_markers
    except BlockError:
        return False


def mutable_paths(files: Sequence[ProgramFile]) -> tuple[str, ...]:
    """The files a reply may change: those with EVOLVE-BLOCKs (a one-file program's file is
    mutable either way: without markers all of it is one block)."""
    if len(files) == 1:
        return (files[0].path,)
    return tuple(f.path for f in files if has_blocks(f.text))


def replace_file(source: str, path: str, text: str) -> str:
    """``source`` with the file ``path`` holding ``text`` (a one-file program: ``text``)."""
    files = split_files(source)
    if len(files) == 1:
        return text
    return join_files([ProgramFile(f.path, text if f.path == path else f.text) for f in files])


def changed_paths(parent: str, child: str) -> list[str]:
    """The paths whose text differs between two programs of the same files."""
    before = {f.path: f.text for f in split_files(parent)}
    return [f.path for f in split_files(child) if before.get(f.path) != f.text]


def check_relative(path: str) -> str:
    """``path`` when it is a plain relative path inside a folder; ValueError otherwise."""
    pure = PurePosixPath(path)
    if (not path or pure.is_absolute() or "\\" in path or any(p in ("..", ".", "") for p in
                                                             path.split("/"))):
        raise ValueError(f"'{path}' is not a relative path inside the task folder")
    return pure.as_posix()


def bundle_of(pairs: Iterable[tuple[str, str]]) -> str:
    """The program text of (path, text) pairs."""
    return join_files([ProgramFile(path, text) for path, text in pairs])


def write_program(folder: Path, source: str, entry: str) -> Path:
    """Write the program's files into ``folder`` at their paths (a one-file program at
    ``entry``), replacing a file of the same name; returns the entry's path."""
    for file in split_files(source, entry):
        target = folder / check_relative(file.path)
        if target.is_symlink() or target.is_file():
            target.unlink()  # a task file of the same name: the program wins
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(file.text, encoding="utf-8")
    return folder / entry
