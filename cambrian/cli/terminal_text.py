"""Text from a run (a candidate's code, output and errors, a model's reply) made safe to print
on a terminal: control characters are shown, never sent. A candidate printing ESC sequences
could otherwise recolour, retitle or rewrite the terminal of whoever inspects the run."""

from __future__ import annotations

import re

from rich.markup import escape

# C0 controls but newline and tab, DEL, C1 controls (0x9b is a CSI on some terminals), and the
# bidirectional overrides and isolates that reorder how a line reads.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_DEL_PICTURE = "\u2421"
_C0_PICTURES = 0x2400  # U+2400..U+241F: a visible symbol for each C0 control (ESC is ␛)


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(_C0_PICTURES + code)
    if code == 0x7F:
        return _DEL_PICTURE
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character replaced by a visible stand-in (ESC -> ␛)."""
    return _UNSAFE.sub(_shown, text)


def plain(text: str) -> str:
    """``text`` printable and with rich's markup escaped: shown exactly as stored."""
    return escape(printable(text))
