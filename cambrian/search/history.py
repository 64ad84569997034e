"""The parent's history for the prompt (``prompt.history_programs``): the last few steps of its
lineage, each with the change its author described and what it did to the score, so the model
sees which kinds of change have been paying off on this line of programs."""

from __future__ import annotations

from typing import Any

from cambrian.core.objective import MAXIMIZE, Objective
from cambrian.core.status import CandidateStatus
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


def tried_ideas_note(store: Store, parent_id: int, limit: int,
                     objective: Objective = MAXIMIZE) -> tuple[tuple[str, ...], dict[str, Any]]:
    """(notes, tags): the changes the last ``limit`` children of ``parent_id`` tried that did not
    beat it, so the next proposal does not repeat them; nothing when there are none."""
    if limit <= 0:
        return (), {}
    parent = store.candidates.get(parent_id)
    lines, ids = [], []
    for child in reversed(store.candidates.children(parent_id)):
        if len(lines) >= limit:
            break
        description = (child.description or "").strip().replace("\n", " ")
        if not description or child.status in (CandidateStatus.PENDING, CandidateStatus.DUPLICATE):
            continue
        if child.status is CandidateStatus.CORRECT and child.score is not None and parent.score is not None:
            if objective.better(child.score, parent.score):
                continue
            outcome = ("no better" if child.score == parent.score
                       else f"worse: {child.score:.6g}")
        elif child.status is CandidateStatus.CORRECT:
            continue
        else:
            outcome = "failed" if child.status is not CandidateStatus.REJECTED else "refused"
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
        lines.append(f"  - \"{description}\" ({outcome})")
        ids.append(child.id)
    if not lines:
        return (), {}
    note = ("Changes already tried on the current program that did not improve it (try "
            "something else):\n" + "\n".join(reversed(lines)))
    return (note,), {"tried_ideas": ids}
