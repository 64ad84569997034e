"""Which function a focused edit works on.

Told "pick one function or loop and improve it", a small model copies the first function of the
block unchanged (measured with the 1.5B model in benchmarks/discovery.py: a quarter of its
replies). A ``local_fix`` or ``refinement`` proposal is instead given one function of the
parent's EVOLVE-BLOCKs to work on, drawn at random, so the edits spread over the program.
"""

from __future__ import annotations

import numpy as np

from cambrian.lang.definitions import find_definitions
from cambrian.lang.languages import Language
from cambrian.task.blocks import BlockError, parse_regions

FOCUSED_INTENTS = frozenset({"local_fix", "refinement"})
NOTE_KEY = "focus_function"


def block_functions(source: str, language: Language) -> list[str]:
    """Names of the top-level functions defined inside the EVOLVE-BLOCKs of ``source``."""
    if language.definitions is None:
        return []
    try:
        regions = parse_regions(source)
        definitions = find_definitions(source, language, top_level_only=True)
    except (BlockError, SyntaxError, ValueError):
        return []
    if not regions.has_markers:
        return [d.name for d in definitions]
    return [d.name for d in definitions
            if any(regions.is_mutable(line) for line in range(d.start, d.end))]


def choose_focus(rng: np.random.Generator, source: str, language: Language) -> str | None:
    """A function to work on; None when the block has fewer than two (nothing to choose)."""
    names = list(dict.fromkeys(block_functions(source, language)))
    return names[int(rng.integers(len(names)))] if len(names) >= 2 else None


def focused_instruction(instruction: str, function: str) -> str:
    return (f"Work on the function `{function}`: your reply rewrites it completely, with a real "
            f"change to what it computes or how.\n{instruction}")
