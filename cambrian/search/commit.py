"""Committing what the loop learns, each in one transaction through the recorder: an evaluation
(with the candidate's status, the bandit credit, the selector's events and the search state), a
duplicate, a child screened out before full evaluation, and an LLM-free child."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cambrian.core.evaluation import EvaluationResult
from cambrian.core.events import (
    BanditSnapshot,
    CandidateEvaluated,
    DuplicateFound,
    RemoteScorerDown,
    ScreenedOut,
)
from cambrian.core.hooks import DirectChild
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.judge.tiers import evaluation_warnings, is_screened, stage_results
from cambrian.llm.bandit import reward_improvement
from cambrian.llm.ensemble import Ensemble
from cambrian.search.archive import Archive
from cambrian.search.context import RunContext
from cambrian.store.rows import CandidateRow, NewCandidate
from cambrian.store.run_files import write_best

BANDIT_SNAPSHOT_EVERY = 5  # completed pulls between snapshots of the arm statistics

CommitListener = Callable[[CandidateRow, Any], None]


class Committer:
    def __init__(self, ctx: RunContext, archive: Archive, ensemble: Ensemble,
                 search_state: Callable[[], dict[str, Any]],
                 evaluations_spent: Callable[[], int]) -> None:
        self.ctx = ctx
        self.archive = archive
        self.ensemble = ensemble
        self.search_state = search_state
        self.evaluations_spent = evaluations_spent
        # Told of every committed evaluation (candidate row, its ProgramRecord) inside the
        # commit's transaction: the mutation schedule, the novelty index, the request cache.
        self.listeners: list[CommitListener] = []

    def evaluation(self, row: CandidateRow, result: EvaluationResult,
                   worker: str = "local") -> None:
        ctx = self.ctx
        ctx.counters.failed_slots = 0
        ctx.counters.screened_out = 0
        correct = result.correct and result.combined_score is not None
        # Screened at a tiered quick stage: no full-set score, so no fitness (judge/tiers.py).
        status = (CandidateStatus.SCREENED if is_screened(result)
                  else CandidateStatus.CORRECT if correct else CandidateStatus.INCORRECT)
        previous_best = self.archive.best_fitness
        recorder = ctx.recorder
        with recorder.transaction():
            for _kind, payload in evaluation_warnings(result):  # e.g. remote scorer down
                recorder.emit(RemoteScorerDown(error=str(payload.get("error", "")),
                                               candidate_id=row.id))
            for stage, stage_result in stage_results(result):  # tiered evaluation: one row each
                recorder.add_evaluation(row.id, stage_result, stage, worker)
            recorder.add_evaluation(row.id, result, "main", worker)  # last: what the search uses
            recorder.set_outcome(row.id, status, score=result.combined_score, error=result.error)
            committed = ctx.store.candidates.get(row.id)
            record = self.archive.record_of(committed, result)
            self._credit_arm(committed, record)
            recorder.emit(*self.archive.take_in(record))
            for listener in self.listeners:
                listener(committed, record)
            recorder.save_state(self.search_state())
            recorder.emit(CandidateEvaluated(
                candidate_id=row.id, status=result.status, score=result.combined_score,
                best_score=self.archive.best_score(), evaluated=self.evaluations_spent(),
                generations=ctx.config.evolution.generations))
        if self.archive.best_fitness is not None and self.archive.best_fitness != previous_best:
            write_best(ctx.run_dir, ctx.store, row.id, ctx.task.program_filename)

    def _credit_arm(self, row: CandidateRow, record: Any) -> None:
        """Bandit reward of the arm that proposed ``row`` (seed 000 §3.3)."""
        arm = row.notes.get("arm")
        if arm is None or row.parent_id is None:
            return
        programs = self.archive.selector.programs
        parent, initial = programs.get(row.parent_id), programs.get(1)
        self.ensemble.observe(arm, reward_improvement(
            record.fitness, parent.fitness if parent is not None else None,
            initial.fitness if initial is not None else None))
        snapshot = self.ensemble.snapshot(every=BANDIT_SNAPSHOT_EVERY)
        if snapshot is not None:
            self.ctx.recorder.emit(BanditSnapshot(**snapshot))

    def screened_out(self, row: CandidateRow, reason: str) -> None:
        self.ctx.counters.screened_out += 1
        recorder = self.ctx.recorder
        with recorder.transaction():
            recorder.set_outcome(row.id, CandidateStatus.REJECTED, error=reason,
                                 notes={**row.notes, "screened_out": True})
            recorder.save_state(self.search_state())
            recorder.emit(ScreenedOut(candidate_id=row.id, reason=reason))

    def duplicate(self, row: CandidateRow, earlier: CandidateRow) -> None:
        self.ctx.counters.failed_slots += 1  # a generation spent on a program we already had
        recorder = self.ctx.recorder
        with recorder.transaction():
            recorder.set_outcome(row.id, CandidateStatus.DUPLICATE, score=earlier.score,
                                 notes={**row.notes, "duplicate_of": earlier.id})
            recorder.emit(DuplicateFound(candidate_id=row.id, duplicate_of=earlier.id))

    def direct_child(self, generation: int, child: DirectChild) -> int | None:
        """Store an LLM-free child as pending; None when it is a program the run already has."""
        ctx = self.ctx
        if ctx.store.candidates.find_by_source(child.source) is not None:
            return None
        parent = self.archive.selector.programs.get(child.parent_id)
        candidate_id = ctx.recorder.add_candidate(NewCandidate(
            generation=generation, island=parent.island if parent is not None else 0,
            parent_id=child.parent_id, operator=child.operator, status=CandidateStatus.PENDING,
            language=ctx.task.language.name, source=child.source, description=child.description,
            notes={"llm_free": True, "other_parents": list(child.other_parent_ids),
                   **child.notes}),
            parents=(child.parent_id, *child.other_parent_ids))
        self.archive.on_child(child.parent_id)
        return candidate_id
