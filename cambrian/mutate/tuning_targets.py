"""Concrete targets for a "tuning" mutation: the lines of the EVOLVE-BLOCKs that hold numeric
literals. Told only "tune the parameters", a 1.5B model often sends the function back unchanged;
shown the lines whose numbers it may change, it nearly always changes one of them.
"""

from __future__ import annotations

import re

from cambrian.lang.languages import Language
from cambrian.task.knobs import LiteralSite, is_named_setting, literal_sites, literal_value

MAX_TARGET_LINES = 8
MAX_LINE_CHARS = 100
# Literals that are almost always structure (loop starts, offsets, halving), not settings.
TRIVIAL_VALUES = frozenset({0.0, 1.0, 2.0})
_DEFINE = re.compile(r"#\s*define\b")


def _is_setting(site: LiteralSite) -> bool:
    try:
        value, _ = literal_value(site.text)
    except ValueError:
        return False
    return abs(value) not in TRIVIAL_VALUES or is_named_setting(site)


def tuning_target_lines(source: str, language: Language | str,
                        limit: int = MAX_TARGET_LINES) -> list[str]:
    """Distinct stripped lines inside the EVOLVE-BLOCKs with at least one numeric literal that is
    neither an index or a shape (``a[3]``) nor 0, 1 or 2 (unless a named upper-case constant
    holds it), at most ``limit``: lines holding a fractional value first, each group in program
    order."""
    by_line: dict[int, tuple[str, bool]] = {}  # line -> (text, holds a non-integer setting)
    for site in literal_sites(source, language):
        if not site.mutable or site.in_subscript or not _is_setting(site):
            continue
        text = site.line_text.strip()
        if not text or text.startswith("//") or (text.startswith("#") and not _DEFINE.match(text)):
            continue
        fractional = literal_value(site.text)[1] == "float"
        previous = by_line.get(site.line)
        by_line[site.line] = (text, fractional or (previous is not None and previous[1]))
    # Lines with fractional settings first: whole numbers are more often counts and sizes the
    # rest of the program depends on (26 circles), whose change breaks it.
    ordered = sorted(by_line.items(), key=lambda item: (not item[1][1], item[0]))
    lines: list[str] = []
    for _, (text, _) in ordered:
        text = text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 1] + "…"
        if text not in lines:
            lines.append(text)
        if len(lines) >= limit:
            break
    return lines


def tuning_targets_text(source: str, language: Language | str) -> str:
    """A prompt paragraph listing the tunable lines ("" when there are none)."""
    lines = tuning_target_lines(source, language)
    if not lines:
        return ""
    listed = "\n".join(f"- `{line}`" for line in lines)
    return ("Lines of the EVOLVE-BLOCK with numbers you can change (pick one or two, and change "
            f"their values):\n{listed}")
