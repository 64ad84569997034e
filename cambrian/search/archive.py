"""The archive as the loop sees it: the search algorithm's selector, rebuilt on resume by
replaying every committed evaluation in order (``algorithm.py`` explains why that is exact), or
by loading the stored resume snapshot and replaying only what came after it
(``resume_snapshot.py``), the best fitness so far, and the search state saved with every
commit."""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any

import numpy as np

from cambrian.core.evaluation import EvaluationResult, case_scores, scores_of_cases
from cambrian.core.events import ArchiveSnapshotMismatch, Event
from cambrian.core.hooks import LoopHook
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.search.algorithm import ProgramRecord, Selector, commit_rng
from cambrian.store.recorder import Recorder
from cambrian.store.rows import CandidateRow, ReplayRow
from cambrian.store.store import Store

SNAPSHOT_KEY = "archive_snapshot"
log = logging.getLogger(__name__)


def _plain(value: Any) -> Any:
    """``value`` as it reads back from the store (JSON: string keys, lists for tuples)."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


class Archive:
    def __init__(self, selector: Selector, objective: Objective, seed: int) -> None:
        self.selector = selector
        self.objective = objective
        self.seed = seed
        self.best_fitness: float | None = None
        self.taken_since_snapshot = 0  # evaluations taken in since the last resume snapshot
        # Children counts as the store has them up to candidate ``children_from`` (set by the
        # restore), and the children the selector was told of since (``on_child``): what a
        # resume snapshot needs to write the store's counts rather than the live ones.
        self.children_from = 0
        self.child_calls: Counter[int] = Counter()

    def record_of(self, row: CandidateRow, result: EvaluationResult) -> ProgramRecord:
        correct = row.status is CandidateStatus.CORRECT and row.score is not None
        return ProgramRecord(
            id=row.id, parent_id=row.parent_id, island=row.island or 0,
            generation=row.generation, correct=correct,
            fitness=self.objective.fitness(row.score) if correct else None,
            metrics=dict(result.public), case_scores=case_scores(result),
            code_length=len(row.source or ""))

    def replay_record(self, row: ReplayRow) -> ProgramRecord:
        """``record_of`` for a stored evaluation read back on resume."""
        correct = row.status is CandidateStatus.CORRECT and row.score is not None
        return ProgramRecord(
            id=row.id, parent_id=row.parent_id, island=row.island or 0,
            generation=row.generation, correct=correct,
            fitness=self.objective.fitness(row.score) if correct else None,
            metrics=row.public, case_scores=scores_of_cases(row.cases) if row.cases else {},
            code_length=row.code_length)

    def take_in(self, record: ProgramRecord) -> list[Event]:
        """Add one evaluated program (in commit order); the selector's events."""
        events = self.selector.add(record, commit_rng(self.seed, record.id))
        self.taken_since_snapshot += 1
        if record.correct and record.fitness is not None and (
                self.best_fitness is None or record.fitness > self.best_fitness):
            self.best_fitness = record.fitness
        return events

    def best_score(self) -> float | None:
        return self.objective.score(self.best_fitness)

    def on_child(self, parent_id: int) -> None:
        """A proposal from ``parent_id`` produced a child program: tell the selector."""
        self.selector.on_child(parent_id)
        self.child_calls[parent_id] += 1

    def replay(self, store: Store) -> None:
        """Replay every committed evaluation into the (fresh) selector, with the children
        counts the store has."""
        for row in store.candidates.replay_rows():
            self.take_in(self.replay_record(row))
        for parent_id, count in store.candidates.children_counts().items():
            program = self.selector.programs.get(parent_id)
            if program is not None:
                program.children = count

    def restore(self, store: Store, hooks: list[LoopHook], recorder: Recorder) -> None:
        """After the selector was rebuilt (``replay``, or a resume snapshot and the evaluations
        after it): load the states that cannot be derived from the history and check the
        stored archive snapshot."""
        self.taken_since_snapshot = 0
        self.children_from = store.resume_snapshot.last_candidate_id()
        self.child_calls.clear()
        self.selector.load_state(store.state.get("selector", {}))
        saved_hooks = store.state.get("hooks", {})
        for hook in hooks:
            hook.load_state(saved_hooks.get(hook.name, {}) if isinstance(saved_hooks, dict)
                            else {})
        self.verify_snapshot(store, recorder)

    def verify_snapshot(self, store: Store, recorder: Recorder) -> bool:
        """True when the replayed archive matches the snapshot stored at the last commit (or
        there is none). A difference (a selector whose ``add`` is not a pure function of the
        history) is logged and recorded."""
        stored = store.state.get(SNAPSHOT_KEY)
        if stored is None:
            return True
        replayed = _plain(self.selector.snapshot())
        if replayed == stored:
            return True
        log.warning("replaying the run did not rebuild the stored archive: stored %s, "
                    "replayed %s", stored, replayed)
        recorder.emit(ArchiveSnapshotMismatch(stored=stored, replayed=replayed))
        return False

    def state(self, rng: np.random.Generator, hooks: list[LoopHook],
              ensemble_state: dict[str, Any]) -> dict[str, Any]:
        """The search state saved with every commit."""
        return {
            "rng": rng.bit_generator.state,
            "selector": self.selector.state(),
            "hooks": {name: value for name, value in ((h.name, h.state()) for h in hooks) if value},
            "ensemble": ensemble_state,
            SNAPSHOT_KEY: self.selector.snapshot(),
        }
