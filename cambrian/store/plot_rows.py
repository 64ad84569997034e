"""The rows the web UI's plots are computed from (``cambrian/ui/plots.py``): LLM spend per call,
each proposal's outcome against its parent, each evaluation stage's start and end, program
sizes, and the public metrics of correct programs. One query each, no program text read back."""

from __future__ import annotations

from dataclasses import dataclass

from cambrian.core.objective import Objective
from cambrian.store.codec import loads
from cambrian.store.database import Database
from cambrian.store.outcomes import Outcomes


@dataclass(frozen=True)
class ProposalOutcomeRow:
    """A child (not the initial program) and what it became."""

    id: int
    created_at: float
    intent: str  # "(operator)" when none was recorded (a tune step's child)
    model: str  # "(operator)" when no model made it
    status: str
    improved: bool  # correct and better than its scored parent


@dataclass(frozen=True)
class EvaluationSpan:
    candidate_id: int
    started_at: float
    ended_at: float


@dataclass(frozen=True)
class ProgramSize:
    id: int
    generation: int
    status: str
    chars: int
    lines: int


@dataclass(frozen=True)
class MetricRow:
    id: int
    score: float | None
    metrics: dict[str, object]


class PlotRows:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._outcomes = Outcomes(db)

    def proposal_outcomes(self, objective: Objective) -> list[ProposalOutcomeRow]:
        """Every proposal that made a child (whatever became of it), oldest first."""
        return [ProposalOutcomeRow(int(i), float(t), str(intent or f"({op})"),
                                   str(model or f"({op})"), str(s), bool(beats))
                for i, _, s, intent, model, op, _, t, beats, _
                in self._outcomes.rows(objective, "with_parent")]

    def evaluation_spans(self) -> list[EvaluationSpan]:
        """Each evaluation stage's start (its commit time less its duration) and end."""
        return [EvaluationSpan(int(i), float(end) - max(0.0, float(d or 0)), float(end))
                for i, end, d in self._db.execute(
                    "SELECT candidate_id, created_at, duration_s FROM evaluations ORDER BY id")]

    def program_sizes(self) -> list[ProgramSize]:
        """Every program's size in characters and lines (a program of several files: all its
        files together), in id order."""
        rows = self._db.execute(
            "SELECT c.id, c.generation, c.status, "
            "COALESCE(length(c.source), (SELECT SUM(length(b.text)) FROM candidate_files f "
            "JOIN blobs b ON b.sha256 = f.sha256 WHERE f.candidate_id = c.id)), "
            "COALESCE(length(c.source) - length(replace(c.source, char(10), '')) + 1, "
            "(SELECT SUM(length(b.text) - length(replace(b.text, char(10), '')) + 1) "
            "FROM candidate_files f JOIN blobs b ON b.sha256 = f.sha256 "
            "WHERE f.candidate_id = c.id)) FROM candidates c "
            "WHERE c.source IS NOT NULL OR c.source_hash IS NOT NULL ORDER BY c.id")
        return [ProgramSize(int(i), int(g), str(s), int(chars or 0), int(lines or 0))
                for i, g, s, chars, lines in rows]

    def correct_metrics(self) -> list[MetricRow]:
        """The public metrics of every correct program's last evaluation stage."""
        rows = self._db.execute(
            "SELECT c.id, c.score, e.public_json FROM candidates c JOIN evaluations e "
            "ON e.id = (SELECT MAX(id) FROM evaluations WHERE candidate_id = c.id) "
            "WHERE c.status = 'correct' ORDER BY c.id")
        return [MetricRow(int(i), score, loads(public, {})) for i, score, public in rows]
