"""The ``diff`` reply format: SEARCH/REPLACE edits, parsed from a reply and applied in order.

    <<<<<<< SEARCH
    exact lines from the current program
    =======
    replacement lines
    >>>>>>> REPLACE

Each SEARCH must match exactly one place inside the EVOLVE-BLOCKs. Matching is tried in tiers
(see :mod:`cambrian.mutate.line_matching`) and stops at the first tier that matches anywhere,
so a loose tier never overrides an exact match elsewhere. Ambiguous edits are never applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cambrian.mutate.line_matching import LineMatch, find_matches, reindent, similar_lines_report
from cambrian.mutate.patch_types import PatchError, RefusalKind
from cambrian.mutate.reply_text import find_fences, is_fence_line
from cambrian.task.blocks import EvolveRegions, line_text, parse_marker, parse_regions, split_lines

_SEARCH_MARKER = re.compile(r"^[ \t]*<{5,9}[ \t]*SEARCH[ \t]*$")
_DIVIDER = re.compile(r"^={5,9}[ \t]*$")
_REPLACE_MARKER = re.compile(r"^[ \t]*>{5,9}[ \t]*REPLACE[ \t]*$")
_BARE_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*$")
_LINE_NUMBER_PREFIX = re.compile(r"^[ \t]*\d+[ \t]?[|:][ \t]?")

FORMAT_REMINDER = "<<<<<<< SEARCH\n(exact lines to find)\n=======\n(new lines)\n>>>>>>> REPLACE"


@dataclass(frozen=True)
class SearchReplace:
    search: list[str]  # line texts, without line endings
    replace: list[str]
    reply_line: int  # 1-based line of the SEARCH marker in the reply


def is_search_marker(line: str) -> bool:
    return _SEARCH_MARKER.match(line_text(line)) is not None


def _strip_wrapping_fence(section: list[str]) -> list[str]:
    """Drop a fence a model put just inside the markers (``<<<<<<< SEARCH`` then ```python)."""
    if section and is_fence_line(section[0]):
        section = section[1:]
    if section and _BARE_FENCE.match(section[-1]):
        section = section[:-1]
    return section


def parse_edits(reply: str) -> tuple[list[SearchReplace], list[str]]:
    """The SEARCH/REPLACE edits of ``reply`` in order, and notes about tolerated slips."""
    edits: list[SearchReplace] = []
    notes: list[str] = []
    outside: list[str] = []  # reply lines outside the edits, checked for an unclosed fence
    state = "outside"
    search: list[str] = []
    replace: list[str] = []
    opened_at = 0
    for number, raw in enumerate(split_lines(reply), start=1):
        text = line_text(raw)
        if state == "outside":
            if _SEARCH_MARKER.match(text):
                state, search, replace, opened_at = "search", [], [], number
            elif _DIVIDER.match(text) or _REPLACE_MARKER.match(text):
                raise PatchError(
                    f"line {number} of the reply (`{text.strip()}`) comes before any "
                    f"'<<<<<<< SEARCH' line. Each edit must look like:\n{FORMAT_REMINDER}"
                )
            else:
                outside.append(raw)
        elif state == "search":
            if _DIVIDER.match(text):
                state = "replace"
            elif _REPLACE_MARKER.match(text) or _SEARCH_MARKER.match(text):
                raise PatchError(
                    f"edit {len(edits) + 1} has no '=======' line between its SEARCH and REPLACE "
                    f"parts. Each edit must look like:\n{FORMAT_REMINDER}"
                )
            else:
                search.append(text)
        else:
            if _REPLACE_MARKER.match(text):
                edits.append(
                    SearchReplace(_strip_wrapping_fence(search), _strip_wrapping_fence(replace), opened_at)
                )
                state = "outside"
            elif _SEARCH_MARKER.match(text):
                raise PatchError(
                    f"edit {len(edits) + 1} is missing its '>>>>>>> REPLACE' line before the next "
                    f"'<<<<<<< SEARCH'. Each edit must look like:\n{FORMAT_REMINDER}"
                )
            else:
                replace.append(text)
    if state == "replace" and replace and _BARE_FENCE.match(replace[-1]):
        # The model closed its code fence but forgot the REPLACE marker: the edit is complete.
        outside.append(replace[-1])
        search, replace = _strip_wrapping_fence(search), _strip_wrapping_fence(replace[:-1])
        edits.append(SearchReplace(search, replace, opened_at))
        notes.append(f"edit {len(edits)} had no '>>>>>>> REPLACE' line; its closing ``` ended it")
    elif state != "outside":
        raise PatchError(
            f"the reply was cut off inside edit {len(edits) + 1}: its '>>>>>>> REPLACE' line is missing",
            truncated=True,
        )
    find_fences("".join(outside))  # raises if a fence around the edits was never closed
    if not edits:
        raise PatchError(
            f"no SEARCH/REPLACE edit found in the reply. Each edit must look like:\n{FORMAT_REMINDER}"
        )
    return edits, notes


def _strip_line_numbers(lines: list[str]) -> list[str] | None:
    """``lines`` without "12 | " prefixes copied from a numbered listing, if all lines have one."""
    code = [line for line in lines if line.strip()]
    if not code or not all(_LINE_NUMBER_PREFIX.match(line) for line in code):
        return None
    return [_LINE_NUMBER_PREFIX.sub("", line, count=1) for line in lines]


def _block_ranges(regions: EvolveRegions) -> str:
    return ", ".join(f"lines {b.content_start + 1}-{b.content_end}" for b in regions.blocks)


def _outside_error(match: LineMatch, regions: EvolveRegions) -> str:
    first, last = match.start + 1, match.end
    crossed = [line for line in regions.marker_lines() if match.start <= line < match.end]
    if crossed:
        marker = line_text(regions.lines[crossed[0]]).strip()
        where = f"lines {first}-{last}, which cross the marker `{marker}` on line {crossed[0] + 1}"
    else:
        where = f"lines {first}-{last}, which are" if last > first else f"line {first}, which is"
        where += " outside the EVOLVE-BLOCK"
    return (
        f"the SEARCH matches {where}; edits outside EVOLVE-BLOCK are not allowed. "
        f"Only code between EVOLVE-BLOCK-START and EVOLVE-BLOCK-END ({_block_ranges(regions)}) can change."
    )


@dataclass(frozen=True)
class _Placement:
    start: int  # source lines [start, end) that change
    end: int
    replacement: list[str]  # the lines that take their place
    marker_as_context: bool  # the SEARCH crossed a marker it left unchanged


def _unchanged_edges(search: list[str], replace: list[str]) -> tuple[int, int]:
    """How many leading and trailing lines the edit leaves as they are."""
    old, new = [line.rstrip() for line in search], [line.rstrip() for line in replace]
    shortest = min(len(old), len(new))
    lead = 0
    while lead < shortest and old[lead] == new[lead]:
        lead += 1
    trail = 0
    while trail < shortest - lead and old[-1 - trail] == new[-1 - trail]:
        trail += 1
    return lead, trail


def _placement(
    match: LineMatch, search: list[str], edit: SearchReplace, regions: EvolveRegions
) -> _Placement | None:
    """Where ``match`` would change the program, or None if that is outside the blocks.

    A SEARCH may cross a marker it keeps unchanged (models like to anchor on EVOLVE-BLOCK-END);
    only the lines that actually change must lie inside a block."""
    replacement = edit.replace if match.shift is None else reindent(edit.replace, match.shift)
    if regions.block_containing(match.start, match.end) is not None:
        return _Placement(match.start, match.end, replacement, False)
    if match.tier == "blank lines ignored":
        return None  # no line-by-line correspondence to trim unchanged edges with
    lead, trail = _unchanged_edges(search, edit.replace)
    start, end = match.start + lead, match.end - trail
    if regions.block_containing(start, end) is None:
        return None
    return _Placement(start, end, replacement[lead : len(replacement) - trail], True)


def _locate(edit: SearchReplace, regions: EvolveRegions, notes: list[str], label: str) -> _Placement:
    texts = [line_text(line) for line in regions.lines]
    search = edit.search
    matches = find_matches(texts, search)
    if not matches:
        unnumbered = _strip_line_numbers(search)
        if unnumbered is not None and (matches := find_matches(texts, unnumbered)):
            search = unnumbered
            notes.append(f"{label}: removed line-number prefixes from the SEARCH lines")
    if not matches:
        first = next(line for line in search if line.strip())
        raise PatchError(
            f"{label}: the SEARCH lines were not found in the program. The SEARCH starts with:\n"
            f"    {first.strip()}\n{similar_lines_report(texts, search, regions)}\n"
            "Copy the SEARCH lines exactly from the current program."
        )
    usable = [(m, p) for m in matches if (p := _placement(m, search, edit, regions)) is not None]
    if len(usable) > 1:
        places = ", ".join(
            f"line {m.start + 1}" if m.end - m.start == 1 else f"lines {m.start + 1}-{m.end}"
            for m, _ in usable
        )
        raise PatchError(
            f"{label}: the SEARCH is ambiguous: it matches {len(usable)} places ({places}); "
            "add surrounding lines so that it matches exactly one place."
        )
    if not usable:
        raise PatchError(f"{label}: {_outside_error(matches[0], regions)}")
    return usable[0][1]


def _newline_of(lines: tuple[str, ...]) -> str:
    return "\r\n" if lines and lines[0].endswith("\r\n") else "\n"


def _insert_at_end_of_last_block(regions: EvolveRegions, replacement: list[str]) -> list[str]:
    lines = list(regions.lines)
    block = regions.blocks[-1]
    newline = _newline_of(regions.lines)
    position = block.content_end
    if position > 0 and not lines[position - 1].endswith("\n"):
        lines[position - 1] += newline  # only the last line of a marker-less file lacks one
    return lines[:position] + [text + newline for text in replacement] + lines[position:]


def _splice(regions: EvolveRegions, placement: _Placement) -> list[str]:
    lines = list(regions.lines)
    newline = _newline_of(regions.lines)
    new_lines = [text + newline for text in placement.replacement]
    if new_lines and placement.end > placement.start and not lines[placement.end - 1].endswith("\n"):
        new_lines[-1] = line_text(new_lines[-1])  # keep a missing final newline missing
    return lines[: placement.start] + new_lines + lines[placement.end :]


def _check_no_markers(lines: list[str], label: str) -> None:
    for text in lines:
        if parse_marker(text) is not None:
            raise PatchError(f"{label}: the REPLACE lines must not contain the marker line `{text.strip()}`.")


def apply_edit(source: str, edit: SearchReplace, label: str, notes: list[str]) -> str:
    """``source`` with one edit applied; raises :class:`PatchError` naming ``label``."""
    search = [line.rstrip() for line in edit.search]
    if search == [line.rstrip() for line in edit.replace]:
        raise PatchError(f"{label}: no-op edit: the REPLACE lines are identical to the SEARCH lines.",
                         kind=RefusalKind.NO_CHANGE)
    regions = parse_regions(source)
    if not any(line.strip() for line in edit.search):
        _check_no_markers(edit.replace, label)
        return "".join(_insert_at_end_of_last_block(regions, edit.replace))
    placement = _locate(edit, regions, notes, label)
    _check_no_markers(placement.replacement, label)
    if placement.marker_as_context:
        notes.append(f"{label}: the SEARCH crossed an EVOLVE-BLOCK marker but left it unchanged")
    return "".join(_splice(regions, placement))


def apply_diff_reply(parent_source: str, reply: str) -> tuple[str, int, list[str]]:
    """Apply every edit of ``reply`` in order; returns (source, number of edits, notes)."""
    edits, notes = parse_edits(reply)
    source = parent_source
    for number, edit in enumerate(edits, start=1):
        label = "the edit" if len(edits) == 1 else f"edit {number} of {len(edits)}"
        source = apply_edit(source, edit, label, notes)
    return source, len(edits), notes
