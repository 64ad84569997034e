"""The recorder: the one writer of a run's candidates, evaluations, events and search state.

Writes join the caller's transaction (or make their own); events are written in the same
transaction as the change they describe and published to the run's subscribers only once it
has committed, so a display never shows what a rollback took back.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from cambrian.core.bus import EventBus
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.events import CandidateProposed, Event
from cambrian.core.status import CandidateStatus
from cambrian.store.rows import NewCandidate, NewContext
from cambrian.store.store import Store

MAX_ERROR_CHARS = 4000  # of a candidate's error column (the full text is in its evaluation)


class Recorder:
    def __init__(self, store: Store, bus: EventBus | None = None) -> None:
        self.store = store
        self.bus = bus or EventBus()
        self._queued: list[Event] = []

    @contextmanager
    def transaction(self) -> Iterator[None]:
        outermost = not self.store.database.in_transaction
        try:
            with self.store.transaction():
                yield
        except BaseException:
            if outermost:
                self._queued.clear()
            raise
        if outermost:
            queued, self._queued = self._queued, []
            for event in queued:
                self.bus.publish(event)

    # ------------------------------------------------------------------ events and state

    def emit(self, *events: Event) -> None:
        """Store ``events``; publish them when the enclosing transaction commits."""
        with self.transaction():
            for event in events:
                self.store.events.add(event)
                self._queued.append(event)

    def save_state(self, values: dict[str, Any]) -> None:
        with self.transaction():
            for key, value in values.items():
                self.store.state.put(key, value)

    def save_resume_snapshot(self, header: dict[str, Any], payload: bytes) -> None:
        """Replace the run's resume snapshot (``search/resume_snapshot.py``); a ValueError when
        the payload holds a secret value (nothing is written)."""
        with self.transaction():
            self.store.resume_snapshot.put(header, payload)

    # ------------------------------------------------------------------ candidates

    def add_candidate(self, new: NewCandidate, *, parents: Iterable[int] = (),
                      inspirations: Iterable[int] = (), arm: str | None = None) -> int:
        """Store a candidate with its edges; a pending one (a child to evaluate) is also
        announced as a :class:`CandidateProposed` event (``arm``: the bandit arm behind it)."""
        with self.transaction():
            candidate_id = self.store.candidates.add(new)
            for parent in parents:
                self.store.lineage.add_edge(parent, candidate_id, "parent", new.operator)
            for inspiration in inspirations:
                self.store.lineage.add_edge(inspiration, candidate_id, "inspiration", new.operator)
            if new.status is CandidateStatus.PENDING:
                self.emit(CandidateProposed(candidate_id=candidate_id, operator=new.operator,
                                            model=arm, parent_id=new.parent_id))
        return candidate_id

    def set_outcome(self, candidate_id: int, status: CandidateStatus, *,
                    score: float | None = None, error: str | None = None,
                    notes: dict[str, Any] | None = None) -> None:
        with self.transaction():
            self.store.candidates.update(
                candidate_id, status=status, score=score,
                error=error[:MAX_ERROR_CHARS] if error is not None else None, notes=notes)

    def add_evaluation(self, candidate_id: int, result: EvaluationResult, stage: str = "main",
                       worker: str = "local") -> int:
        with self.transaction():
            return self.store.evaluations.add(candidate_id, result, stage, worker)

    # ------------------------------------------------------------------ LLM calls

    def add_context(self, new: NewContext) -> int:
        with self.transaction():
            return self.store.contexts.add(new)
