"""A program's code to copy or download: the best program on the overview, any candidate's from
its page. A one-file program downloads as its text (``candidate-N.py``), a program of several
files as a zip of its files at their paths."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field

from markupsafe import Markup

from cambrian.core.objective import Objective
from cambrian.lang.languages import language_by_name
from cambrian.store.rows import CandidateRow
from cambrian.store.store import Store
from cambrian.task.program_files import is_bundle, split_files
from cambrian.ui.candidate_view import highlighted
from cambrian.ui.file_views import FileEntry, file_tree


@dataclass(frozen=True)
class BestCode:
    id: int
    score: float | None
    source: str
    filename: str  # what the download is called
    code_html: Markup  # a one-file program's highlighted code
    files: list[FileEntry] = field(default_factory=list)  # a program of several files


def download_name(row: CandidateRow) -> str:
    if row.source and is_bundle(row.source):
        return f"candidate-{row.id}.zip"
    try:
        extensions = language_by_name(row.language).extensions
    except KeyError:
        extensions = ()
    return f"candidate-{row.id}{extensions[0] if extensions else '.txt'}"


def download_body(row: CandidateRow) -> bytes:
    """What the download holds: the program's text, or a zip of its files."""
    source = row.source or ""
    if not is_bundle(source):
        return source.encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in split_files(source):
            archive.writestr(file.path, file.text)
    return buffer.getvalue()


def best_code(store: Store, direction: str) -> BestCode | None:
    """The best correct program, ready to show (None before one exists)."""
    best = store.candidates.best(Objective.of(direction))
    if best is None or not best.source:
        return None
    several = is_bundle(best.source)
    return BestCode(best.id, best.score, best.source, download_name(best),
                    Markup("") if several else highlighted(best.source, best.language),
                    file_tree(best.source, None, best.language, highlighted))
