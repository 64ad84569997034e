"""What every child became, one lean row each (no program text): the rows a run's statistics
are grouped from, by mutation intent, model, the parent's strategy niche or the phase
(``cambrian/meta/reflection_stats.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.store.database import Database


@dataclass(frozen=True)
class ChildOutcome:
    """A child (not the initial program, not pending) and what became of it."""

    id: int
    parent_id: int | None
    status: CandidateStatus
    intent: str | None  # notes.intent: the mutation intent it was asked for
    model: str | None  # the model that wrote it (None: an LLM-free child)
    phase: str | None  # notes.phase, when a phase controller set one
    improved: bool  # correct and better than its correct parent
    created_at: float


class Outcomes:
    def __init__(self, db: Database) -> None:
        self._db = db

    def children(self, objective: Objective) -> list[ChildOutcome]:
        """Every finished child in id order."""
        better = ">" if objective.maximize else "<"
        rows = self._db.execute(
            "SELECT c.id, c.parent_id, c.status, json_extract(c.notes_json, '$.intent'), "
            "c.model, json_extract(c.notes_json, '$.phase'), "
            "c.status = 'correct' AND c.score IS NOT NULL AND p.status = 'correct' "
            f"AND p.score IS NOT NULL AND c.score {better} p.score, c.created_at "
            "FROM candidates c LEFT JOIN candidates p ON p.id = c.parent_id "
            "WHERE c.id != 1 AND c.status != 'pending' ORDER BY c.id")
        return [ChildOutcome(int(i), parent, CandidateStatus(s), _text(intent), model,
                             _text(phase), bool(improved), float(at))
                for i, parent, s, intent, model, phase, improved, at in rows]


def _text(value: object) -> str | None:
    return None if value is None or value == "" else str(value)
