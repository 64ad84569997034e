"""EVOLVE-BLOCK regions: the only parts of a program an LLM may change.

A marker is a line that, once surrounding whitespace and one comment opener/closer of any
common syntax are removed, is exactly ``EVOLVE-BLOCK-START`` (optionally followed by a label,
e.g. ``# EVOLVE-BLOCK-START: inner loop``) or exactly ``EVOLVE-BLOCK-END``. The token inside a
string literal or after code on the same line is therefore not a marker.

A program may hold several blocks; they may not nest. **A program without any marker is one
mutable region covering the whole file** (``EvolveRegions.has_markers`` is False then).

Line numbers in data structures are 0-based indices into :func:`split_lines`; line numbers in
error messages are 1-based, as an editor (or an LLM reading a numbered listing) shows them.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import Literal

START_TOKEN = "EVOLVE-BLOCK-START"
END_TOKEN = "EVOLVE-BLOCK-END"

MarkerKind = Literal["start", "end"]

# Longest openers first so that "--[[" wins over "--" and "<!--" over nothing.
_WRAPPING_COMMENTS: tuple[tuple[str, str], ...] = (
    ("<!--", "-->"),
    ("--[[", "]]"),
    ("/*", "*/"),
    ("(*", "*)"),
    ("{-", "-}"),
    ("#=", "=#"),
)
_LINE_COMMENTS: tuple[str, ...] = ("//", "--", "#", ";", "%", "!")
_LABEL_SEPARATOR = re.compile(r"[^A-Za-z0-9_\-]")


class BlockError(ValueError):
    """The EVOLVE-BLOCK markers are malformed, or code outside them was changed."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line  # 1-based line the problem is on, when there is one


@dataclass(frozen=True)
class Marker:
    kind: MarkerKind
    label: str  # text after EVOLVE-BLOCK-START on its line ("" for END markers)


@dataclass(frozen=True)
class EvolveBlock:
    index: int
    content_start: int  # first line inside the block (0-based)
    content_end: int  # one past the last line inside the block
    start_marker: int | None  # line of the START marker; None for the implicit whole-file block
    end_marker: int | None
    label: str = ""

    @property
    def content_lines(self) -> range:
        return range(self.content_start, self.content_end)

    def contains(self, start: int, end: int) -> bool:
        """Whether lines [start, end) lie entirely inside this block's content."""
        return self.content_start <= start and end <= self.content_end


@dataclass(frozen=True)
class EvolveRegions:
    lines: tuple[str, ...]  # the source's lines, each with its line ending
    blocks: tuple[EvolveBlock, ...]
    has_markers: bool

    def block_containing(self, start: int, end: int) -> EvolveBlock | None:
        """The block whose content holds all of lines [start, end), if any."""
        for block in self.blocks:
            if block.contains(start, end):
                return block
        return None

    def is_mutable(self, line: int) -> bool:
        return self.block_containing(line, line + 1) is not None

    def marker_lines(self) -> list[int]:
        return [
            line
            for block in self.blocks
            for line in (block.start_marker, block.end_marker)
            if line is not None
        ]

    def immutable_segments(self) -> list[tuple[int, int]]:
        """Line ranges [start, end) outside every block's content (marker lines included)."""
        segments: list[tuple[int, int]] = []
        cursor = 0
        for block in self.blocks:
            segments.append((cursor, block.content_start))
            cursor = block.content_end
        segments.append((cursor, len(self.lines)))
        return segments


def split_lines(text: str) -> list[str]:
    """Split on "\\n" only, keeping line endings (unlike str.splitlines, which also splits on
    form feeds and other characters that are legal inside source code)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def line_text(line: str) -> str:
    """A line without its line ending."""
    return line.rstrip("\r\n")


def _strip_comment(text: str) -> str:
    for opener, closer in _WRAPPING_COMMENTS:
        if text.startswith(opener):
            text = text[len(opener) :].rstrip()
            text = text.removesuffix(closer)
            return text.strip()
    for opener in _LINE_COMMENTS:
        if text.startswith(opener):
            # Repeated openers ("##", "///", ";;") are still one comment.
            return text.lstrip(opener[0]).strip()
    return text


def parse_marker(line: str) -> Marker | None:
    """The marker on ``line``, or None if the line is not a marker line."""
    text = _strip_comment(line.strip())
    if text == END_TOKEN:
        return Marker("end", "")
    if text.startswith(START_TOKEN):
        rest = text[len(START_TOKEN) :]
        if not rest:
            return Marker("start", "")
        if _LABEL_SEPARATOR.match(rest):
            return Marker("start", rest.strip(" \t:-()[]"))
    return None


def _near_miss_hint(lines: list[str], first: int) -> str:
    """Point at a line from index ``first`` on that mentions a marker token but is no marker."""
    for number, line in enumerate(lines[first:], start=first + 1):
        if (START_TOKEN in line or END_TOKEN in line) and parse_marker(line) is None:
            return (
                f" (line {number} mentions an EVOLVE-BLOCK marker but is not a marker line: "
                "a marker must be alone on its line, apart from a comment sign)"
            )
    return ""


# A proposal parses its parent and child again at each check (about fifteen times); the result
# is immutable, so the last few sources' are kept.
@functools.lru_cache(maxsize=32)
def parse_regions(source: str) -> EvolveRegions:
    """Find the EVOLVE-BLOCKs of ``source``; raises :class:`BlockError` on bad markers."""
    lines = split_lines(source)
    blocks: list[EvolveBlock] = []
    open_line: int | None = None
    open_label = ""
    for index, line in enumerate(lines):
        marker = parse_marker(line)
        if marker is None:
            continue
        if marker.kind == "start":
            if open_line is not None:
                raise BlockError(
                    f"nested EVOLVE-BLOCK-START at line {index + 1}: the block opened at line "
                    f"{open_line + 1} is still open (close it with EVOLVE-BLOCK-END first)",
                    line=index + 1,
                )
            open_line, open_label = index, marker.label
        else:
            if open_line is None:
                raise BlockError(
                    f"EVOLVE-BLOCK-END at line {index + 1} has no matching EVOLVE-BLOCK-START",
                    line=index + 1,
                )
            blocks.append(
                EvolveBlock(
                    index=len(blocks),
                    content_start=open_line + 1,
                    content_end=index,
                    start_marker=open_line,
                    end_marker=index,
                    label=open_label,
                )
            )
            open_line = None
    if open_line is not None:
        raise BlockError(
            f"EVOLVE-BLOCK-START at line {open_line + 1} is never closed by EVOLVE-BLOCK-END"
            + _near_miss_hint(lines, open_line + 1),
            line=open_line + 1,
        )
    if not blocks:
        whole = EvolveBlock(0, 0, len(lines), None, None)
        return EvolveRegions(tuple(lines), (whole,), has_markers=False)
    return EvolveRegions(tuple(lines), tuple(blocks), has_markers=True)


def block_contents(source: str) -> list[str]:
    """The text inside each block, in order (the whole source when there are no markers)."""
    regions = parse_regions(source)
    return ["".join(regions.lines[block.content_start : block.content_end]) for block in regions.blocks]


def replace_block_contents(source: str, contents: list[str]) -> str:
    """``source`` with each block's content replaced by ``contents[i]``; markers and all text
    outside the blocks are kept byte for byte."""
    regions = parse_regions(source)
    if len(contents) != len(regions.blocks):
        raise BlockError(
            f"got {len(contents)} block contents for a program with {len(regions.blocks)} EVOLVE-BLOCKs"
        )
    if not regions.has_markers:
        return contents[0]
    pieces: list[str] = []
    cursor = 0
    for block, content in zip(regions.blocks, contents):
        pieces.extend(regions.lines[cursor : block.content_start])
        if content and not content.endswith("\n"):
            content += "\n"  # the END marker must stay on its own line
        pieces.append(content)
        cursor = block.content_end
    pieces.extend(regions.lines[cursor:])
    return "".join(pieces)


def immutable_text(source: str) -> str:
    """Everything outside the blocks' contents, marker lines included ("" without markers)."""
    regions = parse_regions(source)
    return "".join("".join(regions.lines[start:end]) for start, end in regions.immutable_segments())


def _shorten(text: str, limit: int = 80) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_immutable_unchanged(parent: str, child: str) -> None:
    """Raise :class:`BlockError` naming the first line outside the EVOLVE-BLOCKs that differs
    between ``parent`` and ``child``. Line endings are not compared."""
    parent_regions = parse_regions(parent)
    child_regions = parse_regions(child)
    if parent_regions.has_markers != child_regions.has_markers or len(parent_regions.blocks) != len(
        child_regions.blocks
    ):
        raise BlockError(
            f"the program must keep its {len(parent_regions.blocks) if parent_regions.has_markers else 0} "
            f"EVOLVE-BLOCK(s) but now has {len(child_regions.blocks) if child_regions.has_markers else 0}"
        )
    segment_pairs = zip(parent_regions.immutable_segments(), child_regions.immutable_segments())
    for (p_start, p_end), (c_start, c_end) in segment_pairs:
        parent_lines = [line_text(line) for line in parent_regions.lines[p_start:p_end]]
        child_lines = [line_text(line) for line in child_regions.lines[c_start:c_end]]
        if parent_lines == child_lines:
            continue
        matcher = difflib.SequenceMatcher(None, parent_lines, child_lines, autojunk=False)
        tag, p_from, _, c_from, _ = next(op for op in matcher.get_opcodes() if op[0] != "equal")
        child_line = c_start + c_from + 1
        if tag == "delete":
            detail = f"line {p_start + p_from + 1} `{_shorten(parent_lines[p_from])}` was removed"
        elif tag == "insert":
            detail = f"line {child_line} `{_shorten(child_lines[c_from])}` was added"
        else:
            detail = (
                f"line {child_line} is `{_shorten(child_lines[c_from])}` "
                f"but must stay `{_shorten(parent_lines[p_from])}`"
            )
        raise BlockError(f"code outside the EVOLVE-BLOCKs changed: {detail}", line=child_line)


def without_markers(source: str) -> str:
    """``source`` without its EVOLVE-BLOCK marker lines: what a text artifact says once it is
    used (a prompt sent to a model, a document read), since a marker of plain text is a line of
    its own. An evaluator imports it (``from cambrian.task.blocks import without_markers``)."""
    return "".join(line for line in split_lines(source) if parse_marker(line) is None)
