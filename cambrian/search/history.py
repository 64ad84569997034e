"""The parent's history for the prompt (``prompt.history_programs``): the last few steps of its
lineage, each with the change its author described and what it did to the score, so the model
sees which kinds of change have been paying off on this line of programs."""

from __future__ import annotations

from typing import Any

from cambrian.core.objective import MAXIMIZE, Objective
from cambrian.store.store import Store

MAX_DESCRIPTION_CHARS = 120


def _score(value: float | None) -> str:
    return "failed" if value is None else f"{value:.6g}"


def lineage_history_note(store: Store, parent_id: int, steps: int,
                         objective: Objective = MAXIMIZE
                         ) -> tuple[tuple[str, ...], dict[str, Any]]:
    """(notes, tags): one note listing up to ``steps`` edits that led to ``parent_id``, oldest
    first; nothing when ``steps`` is 0 or the parent is the initial program."""
    if steps <= 0:
        return (), {}
    chain = []
    current = store.candidates.get(parent_id)
    while current.parent_id is not None and len(chain) < steps:
        parent = store.candidates.get(current.parent_id)
        chain.append((parent, current))
        current = parent
    if not chain:
        return (), {}
    lines = []
    for before, after in reversed(chain):
        change = ""
        if before.score is not None and after.score is not None:
            gain = objective.gain(after.score, before.score)
            verdict = "better" if gain > 0 else "worse" if gain < 0 else "unchanged"
            change = f" ({verdict}" + (f" by {abs(gain):.4g})" if gain else ")")
        description = (after.description or after.operator or "").strip().replace("\n", " ")
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
        lines.append(f"  - program {after.id} from {before.id} ({after.operator}, score "
                     f"{_score(after.score)}{change}): \"{description or 'no description'}\"")
    note = "How the current program came about (oldest step first):\n" + "\n".join(lines)
    return (note,), {"history_steps": len(lines)}
