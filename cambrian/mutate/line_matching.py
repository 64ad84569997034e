"""Find where a SEARCH text occurs in a program, forgiving the slips models make when copying.

Tiers, tried in order; the first tier with any match wins:

1. exact lines;
2. trailing whitespace ignored;
3. a uniform indentation shift ignored (the replacement is then shifted the same way);
4. blank lines ignored (on either side), combined with 2 and 3.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cambrian.task.blocks import EvolveRegions

MAX_SHOWN_LINES = 8


@dataclass(frozen=True)
class IndentShift:
    """Source indentation = ``added`` + (search indentation without its ``removed`` prefix)."""

    added: str
    removed: str


@dataclass(frozen=True)
class LineMatch:
    start: int  # first matched source line (0-based)
    end: int  # one past the last matched source line
    shift: IndentShift | None  # set when the match needed an indentation shift
    tier: str


def _leading(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]


def indent_shift(source: Sequence[str], search: Sequence[str]) -> IndentShift | None:
    """The single indentation shift turning ``search`` into ``source`` line by line, if any."""
    shift: IndentShift | None = None
    for src, sea in zip(source, search):
        src, sea = src.rstrip(), sea.rstrip()
        if not src or not sea:
            if src or sea:
                return None
            continue
        src_indent, sea_indent = _leading(src), _leading(sea)
        if src[len(src_indent) :] != sea[len(sea_indent) :]:
            return None
        if shift is None:
            if src_indent.endswith(sea_indent):
                shift = IndentShift(added=src_indent[: len(src_indent) - len(sea_indent)], removed="")
            elif sea_indent.endswith(src_indent):
                shift = IndentShift(added="", removed=sea_indent[: len(sea_indent) - len(src_indent)])
            else:
                return None
        if not sea_indent.startswith(shift.removed):
            return None
        if src_indent != shift.added + sea_indent[len(shift.removed) :]:
            return None
    return shift


def reindent(lines: Sequence[str], shift: IndentShift) -> list[str]:
    """Apply to replacement lines the shift that made their SEARCH match."""
    shifted = []
    for line in lines:
        if not line.strip():
            shifted.append("")
            continue
        indent = _leading(line)
        if shift.removed:
            indent = indent[len(shift.removed) :] if indent.startswith(shift.removed) else ""
        shifted.append(shift.added + indent + line.lstrip())
    return shifted


LineEquality = Callable[[Sequence[str], Sequence[str]], "IndentShift | None | bool"]


def _windows(texts: Sequence[str], search: Sequence[str], tier: str, equal: LineEquality) -> list[LineMatch]:
    size = len(search)
    matches = []
    for start in range(len(texts) - size + 1):
        verdict = equal(texts[start : start + size], search)
        if verdict is False or verdict is None:
            continue
        shift = verdict if isinstance(verdict, IndentShift) and (verdict.added or verdict.removed) else None
        matches.append(LineMatch(start, start + size, shift, tier))
    return matches


def _exact(window: Sequence[str], search: Sequence[str]) -> bool:
    return list(window) == list(search)


def _trailing_space(window: Sequence[str], search: Sequence[str]) -> bool:
    return all(a.rstrip() == b.rstrip() for a, b in zip(window, search))


def _blank_lines_ignored(texts: Sequence[str], search: Sequence[str]) -> list[LineMatch]:
    wanted = [line for line in search if line.strip()]
    code_lines = [index for index, line in enumerate(texts) if line.strip()]
    matches = []
    for offset in range(len(code_lines) - len(wanted) + 1):
        picked = code_lines[offset : offset + len(wanted)]
        shift = indent_shift([texts[index] for index in picked], wanted)
        if shift is None:
            continue
        useful_shift = shift if shift.added or shift.removed else None
        matches.append(LineMatch(picked[0], picked[-1] + 1, useful_shift, "blank lines ignored"))
    return matches


def find_matches(texts: Sequence[str], search: Sequence[str]) -> list[LineMatch]:
    """Every place ``search`` matches ``texts`` (line texts without endings) at the first tier
    that matches anywhere; [] when no tier matches."""
    if not any(line.strip() for line in search):
        return []
    for tier, equal in (
        ("exact", _exact),
        ("trailing whitespace ignored", _trailing_space),
        ("indentation shifted", indent_shift),
    ):
        matches = _windows(texts, search, tier, equal)  # type: ignore[arg-type]
        if matches:
            return matches
    return _blank_lines_ignored(texts, search)


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def similar_lines_report(texts: Sequence[str], search: Sequence[str], regions: EvolveRegions) -> str:
    """The mutable lines most similar to ``search``, numbered, for the model to copy from."""
    wanted = [line.strip() for line in search if line.strip()]
    starts = [
        (block.content_end, index)
        for block in regions.blocks
        for index in block.content_lines
        if texts[index].strip()
    ]
    if not starts:
        return "The EVOLVE-BLOCK is empty: use an empty SEARCH to add code to it."
    # Rank start lines by their first line only (cheap), then compare whole windows for the best few.
    ranked = sorted(starts, key=lambda item: -_similarity(wanted[0], texts[item[1]].strip()))[:5]

    def window(block_end: int, start: int) -> list[int]:
        picked = [i for i in range(start, block_end) if texts[i].strip()]
        return picked[: len(wanted)]

    best_end, best_start = max(
        ranked,
        key=lambda item: _similarity("\n".join(wanted), "\n".join(texts[i].strip() for i in window(*item))),
    )
    shown = list(range(best_start, min(best_end, best_start + min(len(search), MAX_SHOWN_LINES))))
    listing = "\n".join(f"{index + 1:>5} | {texts[index]}" for index in shown)
    report = f"The most similar lines inside the EVOLVE-BLOCK are (line number | code):\n{listing}"
    for position, (sea, index) in enumerate(zip(wanted, window(best_end, best_start)), start=1):
        if sea != texts[index].strip():
            report += (
                f"\nSEARCH line {position} `{sea}` differs from program line {index + 1} "
                f"`{texts[index].strip()}`."
            )
            break
    return report
