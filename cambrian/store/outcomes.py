"""What every child became, one lean row each (no program text): the rows a run's statistics
are grouped from, by mutation intent, model, the parent's strategy niche or the phase
(``cambrian/meta/reflection_stats.py``). The same query gives the web UI's proposal rows
(``plot_rows.py``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

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


# Which children a read covers: "finished" (every child but the initial program, not pending;
# the run's statistics), "with_parent" (every candidate made from a parent, pending or not; the
# UI's rates).
Which = Literal["finished", "with_parent"]
_WHERE: dict[str, str] = {"finished": "c.id != 1 AND c.status != 'pending'",
                          "with_parent": "c.parent_id IS NOT NULL"}


class Outcomes:
    def __init__(self, db: Database) -> None:
        self._db = db

    def children(self, objective: Objective) -> list[ChildOutcome]:
        """Every finished child in id order."""
        return [ChildOutcome(int(i), parent, CandidateStatus(s), _text(intent), model,
                             _text(phase), bool(beats) and bool(parent_correct), float(at))
                for i, parent, s, intent, model, _, phase, at, beats, parent_correct
                in self.rows(objective, "finished")]

    def rows(self, objective: Objective, which: Which) -> Iterable[tuple[Any, ...]]:
        """The children ``which`` names in id order, one tuple each: id, parent id, status,
        notes' intent, model, operator, notes' phase, created at, whether it is correct and
        better than its parent's score (scored, correct or not), whether that parent is
        correct."""
        better = ">" if objective.maximize else "<"
        return self._db.execute(
            "SELECT c.id, c.parent_id, c.status, json_extract(c.notes_json, '$.intent'), "
            "c.model, c.operator, json_extract(c.notes_json, '$.phase'), c.created_at, "
            "c.status = 'correct' AND c.score IS NOT NULL AND p.score IS NOT NULL "
            f"AND c.score {better} p.score, p.status = 'correct' "
            "FROM candidates c LEFT JOIN candidates p ON p.id = c.parent_id "
            f"WHERE {_WHERE[which]} ORDER BY c.id")


def _text(value: object) -> str | None:
    return None if value is None or value == "" else str(value)
