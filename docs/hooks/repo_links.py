"""MkDocs hook: links from a page to a file of the repository outside docs/ (a benchmark's raw
output, an example, a source file) work on the site as they do on GitHub.

A relative link that leaves docs/ (``../benchmarks/results/hostile.txt``) must name a file or
folder of the repository that exists, else the build warns (and ``mkdocs build --strict``
fails). The file is added to the site under ``repo/`` (a markdown file as ``NAME.md.txt``, so
it is served as its text, not made a page) and the link pointed there; a folder gets an
``index.html`` listing its files, each added likewise.
"""

from __future__ import annotations

import html
import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.repo_links")

LINK = re.compile(r"(!?\[[^\]\n]*\]\()([^)\s#]+)(#[^)\s]*)?(\))")
FENCE = re.compile(r"^(?:```|~~~).*?^(?:```|~~~)[^\n]*$", re.MULTILINE | re.DOTALL)
SITE_FOLDER = "repo"


def _outside_docs(target: str, page_src: str, docs: Path) -> Path | None:
    """The path a link leaving docs/ names, or None for a URL or a link inside docs/."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return None
    resolved = ((docs / page_src).parent / target).resolve()
    if resolved == docs or docs in resolved.parents:
        return None
    return resolved


def _linkable(path: Path, root: Path) -> bool:
    """A file or folder of the repository itself: not outside it, not hidden (.venv, .git)."""
    if root not in path.parents or not path.exists():
        return False
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def _links(markdown: str) -> list[re.Match[str]]:
    fences = [(m.start(), m.end()) for m in FENCE.finditer(markdown)]
    return [m for m in LINK.finditer(markdown)
            if not any(a <= m.start() < b for a, b in fences)]


def _site_uri(relative: str, is_dir: bool) -> str:
    if is_dir:
        return f"{SITE_FOLDER}/{relative}/index.html"
    return f"{SITE_FOLDER}/{relative}" + (".txt" if relative.endswith(".md") else "")


def on_files(files: Files, config: Any) -> Files:
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    wanted: set[Path] = set()
    for page in list(files.documentation_pages()):
        text = Path(page.abs_src_path).read_text(encoding="utf-8")
        for match in _links(text):
            path = _outside_docs(match.group(2), page.src_uri, docs)
            if path is not None and _linkable(path, root):
                wanted.add(path)
    added: set[str] = set()

    def add(path: Path) -> None:
        relative = path.relative_to(root).as_posix()
        uri = _site_uri(relative, False)
        if uri not in added and files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(path)))
            added.add(uri)

    for path in sorted(wanted):
        if path.is_file():
            add(path)
            continue
        entries = sorted(p for p in path.rglob("*")
                         if p.is_file() and "__pycache__" not in p.parts)
        items = []
        for entry in entries:
            add(entry)
            inner = entry.relative_to(path).as_posix()
            href = inner + (".txt" if inner.endswith(".md") else "")
            items.append(f'<li><a href="{html.escape(href)}">{html.escape(inner)}</a></li>')
        relative = path.relative_to(root).as_posix()
        listing = (f"<!doctype html><meta charset=utf-8><title>{html.escape(relative)}/</title>"
                   f"<h1>{html.escape(relative)}/</h1><ul>{''.join(items)}</ul>\n")
        files.append(File.generated(config, _site_uri(relative, True), content=listing))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    depth = page.file.src_uri.count("/")
    pieces: list[str] = []
    last = 0
    for match in _links(markdown):
        path = _outside_docs(match.group(2), page.file.src_uri, docs)
        if path is None:
            continue
        if not _linkable(path, root):
            log.warning("%s links to %s, which is no file or folder of the repository",
                        page.file.src_uri, match.group(2))
            continue
        url = "../" * depth + _site_uri(path.relative_to(root).as_posix(), path.is_dir())
        pieces.append(markdown[last:match.start()])
        pieces.append(f"{match.group(1)}{url}{match.group(3) or ''}{match.group(4)}")
        last = match.end()
    pieces.append(markdown[last:])
    return "".join(pieces)
