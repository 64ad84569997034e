"""The candidate page's view of a program of several files: a file tree (folders, each file
marked changed from the parent or fixed) and a diff per changed file. A one-file program has
neither: the page shows its code and diff as one text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup
from pygments.lexers import get_lexer_for_filename
from pygments.util import ClassNotFound

from cambrian.task.program_files import has_blocks, is_bundle, split_files


@dataclass(frozen=True)
class FileEntry:
    """One line of the file tree: a folder (``path`` None) or a file."""

    depth: int
    name: str
    path: str | None = None
    anchor: str = ""  # the id of the file's code on the page
    changed: bool = False  # differs from the parent's
    fixed: bool = False  # has no EVOLVE-BLOCK: cannot change
    code_html: Markup = Markup("")


def _language_of(path: str, default: str) -> str:
    try:
        return str(get_lexer_for_filename(path).aliases[0])
    except (ClassNotFound, IndexError):
        return default


def file_tree(source: str | None, parent: str | None, language: str,
              highlight: Callable[[str, str], Markup]) -> list[FileEntry]:
    """The tree of a program of several files, each file with its highlighted code (empty for
    a one-file program)."""
    if not source or not is_bundle(source):
        return []
    before = {f.path: f.text for f in split_files(parent)} if parent and is_bundle(parent) else {}
    entries: list[FileEntry] = []
    folders: set[str] = set()
    for number, file in enumerate(split_files(source), start=1):
        parts = file.path.split("/")
        for depth in range(len(parts) - 1):
            folder = "/".join(parts[: depth + 1])
            if folder not in folders:
                folders.add(folder)
                entries.append(FileEntry(depth, parts[depth] + "/"))
        entries.append(FileEntry(
            len(parts) - 1, parts[-1], file.path, f"file-{number}",
            changed=bool(before) and before.get(file.path) != file.text,
            fixed=not has_blocks(file.text),
            code_html=highlight(file.text, _language_of(file.path, language))))
    return entries


def file_diffs(before: str | None, after: str | None, before_name: str, after_name: str,
               diff: Callable[[str | None, str | None, str, str], list[Any]]
               ) -> list[tuple[str, list[Any]]]:
    """(path, diff lines) of each file that differs between two programs of several files
    (empty when either is a one-file program, whose diff is the whole text's)."""
    if not before or not after or not (is_bundle(before) and is_bundle(after)):
        return []
    old = {f.path: f.text for f in split_files(before)}
    found = []
    for file in split_files(after):
        if old.get(file.path) != file.text:
            found.append((file.path, diff(old.get(file.path), file.text,
                                          f"{before_name}: {file.path}",
                                          f"{after_name}: {file.path}")))
    return found
