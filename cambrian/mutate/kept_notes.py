"""Notes a prompt may not drop silently: a person's guidance.

The prompt fitter (``prompts.py``) tries the notes from all of them down to none as the window
tightens. A :class:`KeptNote` (the request builder marks the person's guidance so) outlives the
other notes; when it cannot fit whole it is shortened, and the prompt says so in the note itself
("[shortened for this prompt: 300 of 1,800 characters shown]"); only where even the program
barely fits is it replaced by a line saying it was left out. The candidate page shows the same
words, read back from the stored prompt (:func:`shortened_in`).
"""

from __future__ import annotations

from collections.abc import Sequence

SHORTENED_CHARS = (1000, 300)  # what a kept note is cut to, in turn, before it is left out
SHORTENED_MARK = "[shortened for this prompt:"
LEFT_OUT_MARK = "[left out of this prompt:"


class KeptNote(str):
    """A note the prompt keeps while it shows any note (a person's guidance)."""


def shortened(note: str, chars: int) -> str:
    """``note`` cut to about ``chars`` characters, saying so; unchanged when it is shorter."""
    if len(note) <= chars:
        return note
    return (f"{note[:chars].rstrip()} … {SHORTENED_MARK} {chars:,} of {len(note):,} "
            "characters shown]")


def left_out(note: str) -> str:
    return (f"{LEFT_OUT_MARK} a person's guidance of {len(note):,} characters; this prompt "
            "has no room for it]")


def note_levels(notes: Sequence[str]) -> list[tuple[str, ...]]:
    """The notes a prompt tries, richest first: all; the kept ones (else the first, as
    before); the kept ones shortened; the kept ones as a line saying they were left out (the
    leanest prompt's notes)."""
    everything = tuple(notes)
    kept = tuple(n for n in notes if isinstance(n, KeptNote))
    if not kept:
        return [everything, everything[:1], ()]
    levels = [everything, kept]
    levels += [tuple(shortened(n, chars) for n in kept) for chars in SHORTENED_CHARS]
    levels.append(tuple(left_out(n) for n in kept))
    unique: list[tuple[str, ...]] = []
    for level in levels:
        if level not in unique:
            unique.append(level)
    return unique


def shortened_in(text: str) -> bool:
    """Whether a stored prompt shows a kept note shortened or left out."""
    return SHORTENED_MARK in text or LEFT_OUT_MARK in text
