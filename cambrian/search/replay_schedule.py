"""The order a replay follows: the recorded run's LLM replies and evaluation commits, released
one at a time in the order the run recorded them (``cambrian replay``).

Every decision the loop makes is a function of what it has seen, and what it sees changes only
when a call returns, a child is stored or an evaluation is committed; which of these came first,
and which of them a proposal or a side step (the scratchpad, a prompt rewrite, a self-reflection)
had seen when it drew its request, is the only thing a concurrent run leaves to timing (the
seeds do the rest). The recorded run wrote each with its time, and each call with its latency
(so when it was sent), so its timeline is known: the :class:`Sequencer` answers a call (the
replay provider asks it, ``llm/replay_provider.py``), lets a child be stored (:class:`ReplayGate`),
a proposal slot draw its request (:class:`ReplaySlots`), a side step start
(:func:`hold_side_steps`) and an evaluation commit (the :class:`SequencedExecutor` asks once the
evaluation ran) only when everything recorded before it has happened in the replay too, and the
loop has then run what follows from it at once. Evaluations found duplicate follow from those and
are waited for, not released.

The sequencer ends the replay (by cancelling its run) when a request has no recorded reply or a
child is made that the run never made (the replay diverged, or it went past the end of a run
that was stopped), when the run's evaluation ``cut`` has been committed (``--from N``), or when
nothing has moved for ``stall_s`` seconds (what the replay waits for never comes; work the
timeline does not see, such as loading the novelty embedding model, may take a minute).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NoReturn

from cambrian.core.events import CandidateEvaluated, DuplicateFound, Event, ScreenedOut, event_kind
from cambrian.core.hooks import LoopHook, SlotContext, SlotTaken
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.executor import EvaluationExecutor, EvaluationJob, EvaluationOutcome
from cambrian.llm.replay_provider import ReplyBook
from cambrian.mutate.filters import FilterVerdict, ProposedChild
from cambrian.search.side_work import PeriodicJob
from cambrian.store.rows import CandidateRow, ContextRow
from cambrian.store.store import Store

POLL_S = 0.005  # how often a waiting call or commit looks whether its turn came
SETTLE_YIELDS = 50  # loop turns given to what follows at once from the previous step
WATCH_S = 0.05


@event_kind("replay_start")
@dataclass(frozen=True)
class ReplayStarted(Event):
    """This run re-executes another: its replies are served from ``source_run``'s trace up to
    evaluation ``until`` (None: all of them); a model named by ``model`` continues it live."""

    source_run: str  # the run folder replayed
    source_id: str  # its run id
    until: int | None = None
    model: str | None = None


@event_kind("replay_stop")
@dataclass(frozen=True)
class ReplayStopped(Event):
    """How the served part of a replay ended (``StopKind``) and why."""

    ended: str
    reason: str
    served: int  # replies served from the trace


class StopKind(StrEnum):
    COMPLETED = "completed"  # the replayed loop ended on its own
    CUT = "cut"  # the evaluation asked for (--from N) was committed
    END_OF_TRACE = "end_of_trace"  # the recorded run stopped here (interrupted, then not resumed)
    DIVERGED = "diverged"  # the replay did what the recorded run never did
    STALLED = "stalled"  # waited for something of the recorded run that never came
    FAILED = "failed"  # the replay's own bookkeeping failed (the message says how)


# The side steps whose start the replay times, by the purpose of the one call each step makes.
SIDE_STEPS = {"meta": "meta-scratchpad", "reflection": "self-reflection",
              "prompt_evolution": "prompt evolution"}


@dataclass(frozen=True)
class Entry:
    """One step of the recorded run: an LLM call returned (``call``, a context id), a child was
    stored (``candidate``), an evaluation was committed or found a duplicate (``commit``), a
    proposal slot drew its first request (``slot``, its generation) or a side step started
    (``step``, its call's context id; ``detail`` its loop hook)."""

    kind: str
    ref: int
    at: float
    gated: bool  # released by the sequencer; else (children, duplicates) waited for
    evaluated: int | None = None  # a commit's count of evaluations spent, as the run showed it
    detail: str = ""  # a commit: its event (evaluated, duplicate...); a step: its hook's name

    def describe(self) -> str:
        return {"call": f"LLM call {self.ref}", "candidate": f"candidate {self.ref} being stored",
                "slot": f"the proposal of generation {self.ref} drawing its request",
                "step": f"the side step '{self.detail}' starting (its call {self.ref})",
                }.get(self.kind, f"the evaluation of candidate {self.ref} being committed")


_RANK = {"slot": 0, "step": 0, "candidate": 1, "call": 2, "commit": 3}


@dataclass(frozen=True)
class Timeline:
    entries: tuple[Entry, ...]

    @classmethod
    def from_store(cls, store: Store, book: ReplyBook) -> Timeline:
        contexts = store.contexts.list()
        candidates = store.candidates.list()
        entries = [Entry("call", row.id, row.created_at, True) for row in contexts]
        entries += [Entry("candidate", row.id, row.created_at, False) for row in candidates]
        committed: set[int] = set()
        for stored in store.events.list(CandidateEvaluated, DuplicateFound, ScreenedOut):
            event = stored.event
            candidate_id = getattr(event, "candidate_id", None)
            if not isinstance(candidate_id, int) or candidate_id in committed:
                continue
            committed.add(candidate_id)
            evaluated = event.evaluated if isinstance(event, CandidateEvaluated) else None
            entries.append(Entry("commit", candidate_id, stored.created_at,
                                 isinstance(event, CandidateEvaluated), evaluated, event.kind))
        entries += _starts(contexts, candidates, book)
        entries.sort(key=lambda e: (e.at, _RANK[e.kind], e.ref))
        return cls(tuple(entries))

    def evaluations(self) -> int:
        """The evaluations the recorded run spent (its last commit's count)."""
        return max((e.evaluated for e in self.entries if e.evaluated is not None), default=0)

    def children(self, store: Store) -> dict[tuple[str, int | None], list[int]]:
        """The recorded run's children that passed its reply checks, by (program, parent), in
        the order they were stored: what a replay's child is matched against."""
        found: dict[tuple[str, int | None], list[int]] = {}
        for row in store.candidates.list():
            if row.source is not None and row.parent_id is not None:
                found.setdefault((row.source, row.parent_id), []).append(row.id)
        return found

    def cut_after(self, evaluation: int) -> int | None:
        """The entry of the commit that brought the run's evaluations to ``evaluation``."""
        return next((i for i, e in enumerate(self.entries)
                     if e.evaluated is not None and e.evaluated >= evaluation), None)


def _starts(contexts: list[ContextRow], candidates: list[CandidateRow],
            book: ReplyBook) -> list[Entry]:
    """When the recorded run's proposal slots drew their first request and its side steps
    started: when their first call was sent (its reply's time less its latency), the request
    being built just before."""
    rows = {row.id: row for row in contexts}

    def sent(context_id: int) -> float:
        call = book.recorded.get(context_id)
        row = rows[context_id]
        return call.sent_at if call is not None else row.created_at - row.latency_s

    starts: list[Entry] = []
    generations: set[int] = set()
    for candidate in candidates:  # a slot's first child (or failed attempt) names its call
        if candidate.generation in generations or candidate.context_id not in rows:
            continue
        generations.add(candidate.generation)
        first = rows[candidate.context_id]
        while first.parent_context_id in rows:  # back to the conversation's first call
            first = rows[first.parent_context_id]
        if first.purpose == "mutation":
            starts.append(Entry("slot", candidate.generation, sent(first.id), True))
    for row in contexts:
        job = SIDE_STEPS.get(row.purpose)
        if job is not None and row.id in book.recorded and row.parent_context_id is None:
            starts.append(Entry("step", row.id, sent(row.id), True, detail=job))
    return starts


class Sequencer:
    """Releases the replay's calls and commits in the recorded order (see the module doc)."""

    def __init__(self, timeline: Timeline, replay: Store, *, cut: int | None = None,
                 stall_s: float = 180.0, evaluation_s: float = 0.0) -> None:
        """``evaluation_s``: how much longer than ``stall_s`` the replay waits while an
        evaluation runs (the task's evaluation time limit)."""
        self.timeline = timeline
        self.replay = replay  # the replay's own store: what has happened so far
        self.cut = cut  # entry index of the last commit to replay; None: all of them
        self.stall_s = stall_s
        self.evaluation_s = evaluation_s
        self.position = 0  # entries before it have all happened in the replay
        self.evaluating = 0  # evaluations running in the replay (not yet waiting to commit)
        self.served = 0
        self.stopped: tuple[StopKind, str] | None = None
        self._run: asyncio.Task[Any] | None = None
        self._index = {(e.kind, e.ref): i for i, e in enumerate(timeline.entries)}
        self._started: set[tuple[str, int]] = set()  # slots and side steps started here
        self._steps: dict[str, list[int]] = {}  # a side step's starts, by its hook's name
        for index, entry in enumerate(timeline.entries):
            if entry.kind == "step":
                self._steps.setdefault(entry.detail, []).append(index)

    def attach(self, run: asyncio.Task[Any]) -> None:
        """The task running the replayed loop: what a stop cancels."""
        self._run = run

    def index(self, kind: str, ref: int) -> int | None:
        """The timeline position of a recorded step (``Entry.kind``, its id)."""
        return self._index.get((kind, ref))

    # ------------------------------------------------------------------ progress

    def _happened(self, entry: Entry) -> bool:
        if entry.kind in ("slot", "step"):
            return (entry.kind, entry.ref) in self._started
        if entry.kind == "call":  # context ids run 1, 2, 3... in the replay as in the run
            return self.replay.contexts.count() >= entry.ref
        row = self.replay.candidates.find(entry.ref)
        if entry.kind == "candidate":
            return row is not None
        return row is not None and row.status is not CandidateStatus.PENDING

    def advance(self) -> int:
        entries = self.timeline.entries
        while self.position < len(entries) and self._happened(entries[self.position]):
            self.position += 1
        return self.position

    def waiting_for(self) -> str:
        entries = self.timeline.entries
        return (entries[self.position].describe() if self.position < len(entries)
                else "nothing (every recorded step happened)")

    # ------------------------------------------------------------------ turns

    async def entry_turn(self, index: int) -> None:
        """Return once entry ``index`` may happen: every earlier one has, and the loop has run
        what follows from them at once. An entry past the cut never may."""
        if self.cut is not None and index > self.cut:
            await self.park()
        while True:
            if self.stopped is not None:
                await self.park()
            if self.advance() >= index:
                for _ in range(SETTLE_YIELDS):
                    await asyncio.sleep(0)
                if self.advance() >= index and self.stopped is None:
                    return
            await asyncio.sleep(POLL_S)

    async def turn(self, context_id: int) -> None:
        """The replay provider's turn for recorded call ``context_id`` (``Turnstile.turn``)."""
        index = self._index.get(("call", context_id))
        if index is None:  # a recorded row outside the timeline: cannot happen, but never hang
            return
        await self.entry_turn(index)
        self.served += 1

    async def missing(self, label: str, message: str) -> NoReturn:
        """A request with no recorded reply (``Turnstile.missing``)."""
        if self.advance() >= len(self.timeline.entries):
            self.stop(StopKind.END_OF_TRACE, "the replay reached the end of the recorded run "
                                             "(it stopped there)")
        else:
            self.stop(StopKind.DIVERGED, f"{message} (waiting for {self.waiting_for()})")
        await self.park()

    async def slot_turn(self, generation: int) -> None:
        """A proposal slot draws its first request when the recorded one did (at once for a
        slot the run took without a call, such as a tune step)."""
        index = self._index.get(("slot", generation))
        if index is not None:
            await self.entry_turn(index)
            self._started.add(("slot", generation))

    def step_due(self, job: str) -> bool:
        """Whether side step ``job`` starts now: its next recorded start is next in the
        timeline (the loop asks at each of its turns; it then starts it at once)."""
        starts = self._steps.get(job)
        if not starts or self.stopped is not None:
            return False
        if (self.cut is not None and starts[0] > self.cut) or self.advance() != starts[0]:
            return False
        self._started.add(("step", self.timeline.entries[starts.pop(0)].ref))
        return True

    async def commit_turn(self, candidate_id: int) -> None:
        """An evaluation of the replay ran: its commit waits for its recorded turn."""
        index = self._index.get(("commit", candidate_id))
        if index is not None and not self.timeline.entries[index].gated:
            found = self.timeline.entries[index].detail
            self.stop(StopKind.DIVERGED, f"candidate {candidate_id} was evaluated; the recorded "
                                         f"run found it {found} instead (a run recorded "
                                         "before children of one loop turn were queued in the "
                                         "order they were stored)")
            await self.park()
        if index is None:
            if self.advance() >= len(self.timeline.entries):
                self.stop(StopKind.END_OF_TRACE, "the replay reached the end of the recorded "
                                                 "run (it stopped there)")
            else:
                self.stop(StopKind.DIVERGED, f"candidate {candidate_id} was evaluated, which "
                                             "the recorded run never did (waiting for "
                                             f"{self.waiting_for()})")
            await self.park()
        await self.entry_turn(index)
        if index == self.cut:  # the commit follows at once; the run stops right after it
            entry = self.timeline.entries[index]
            asyncio.get_running_loop().call_soon(
                self.stop, StopKind.CUT,
                f"evaluation {entry.evaluated} was replayed (candidate {candidate_id})")

    # ------------------------------------------------------------------ stopping

    def stop(self, kind: StopKind, reason: str) -> None:
        if self.stopped is not None:
            return
        self.stopped = (kind, reason)
        if self._run is not None and not self._run.done():
            self._run.cancel(f"replay {kind}: {reason}")

    async def park(self) -> NoReturn:
        """Wait for the cancellation a stop sends (what is parked never happens)."""
        while True:
            await asyncio.sleep(3600)

    async def watch(self) -> None:
        """Stop a replay whose recorded next step does not come for ``stall_s`` seconds."""
        last, since = self.advance(), time.monotonic()
        while self.stopped is None:
            await asyncio.sleep(WATCH_S)
            try:
                position = self.advance()
            except Exception as exc:  # never leave a replay waiting without its watch
                self.stop(StopKind.FAILED, f"{type(exc).__name__}: {exc}")
                return
            idle = time.monotonic() - since
            if position != last:
                last, since = self.position, time.monotonic()
            elif idle > self.stall_s + (self.evaluation_s if self.evaluating else 0.0):
                running = (f" ({self.evaluating} evaluation(s) still running)"
                           if self.evaluating else "")
                self.stop(StopKind.STALLED, f"nothing happened for {idle:.0f} s while the "
                                            f"replay waited for {self.waiting_for()}{running}")


class ReplayGate:
    """The first child filter of a replay: a child made from a reply waits until the recorded
    run stored the same child (same program, same parent), so that children of proposals running
    side by side are stored, and numbered, in the recorded order. It refuses nothing; a child
    the recorded run never made stops the replay (it diverged)."""

    name = "replay"

    def __init__(self, sequencer: Sequencer, children: dict[tuple[str, int | None], list[int]]
                 ) -> None:
        self.sequencer = sequencer
        self.children = {key: list(ids) for key, ids in children.items()}

    async def check_child(self, child: ProposedChild, enforce: bool) -> FilterVerdict:
        ids = self.children.get((child.source, child.parent_id))
        sequencer = self.sequencer
        if not ids:
            sequencer.stop(StopKind.DIVERGED, f"a child of candidate {child.parent_id} was made "
                                              "that the recorded run never made (waiting for "
                                              f"{sequencer.waiting_for()})")
            await sequencer.park()
        index = sequencer.index("candidate", ids.pop(0))
        if index is not None:
            await sequencer.entry_turn(index)
        return FilterVerdict()

    def accepted(self, candidate_id: int, child: ProposedChild, verdict: FilterVerdict) -> None:
        return None


class ReplaySlots(LoopHook):
    """The first loop hook of a replay: a proposal slot draws its request when the recorded
    slot drew it, after the same commits (the replay's loop may start it sooner: it takes
    commits one turn at a time where the run took two in one). It never takes a slot."""

    name = "replay"
    blocks_proposals = False

    def __init__(self, sequencer: Sequencer) -> None:
        self.sequencer = sequencer

    async def take_slot(self, slot: SlotContext) -> SlotTaken | None:
        await self.sequencer.slot_turn(slot.generation)
        return None


def hold_side_steps(jobs: list[PeriodicJob], sequencer: Sequencer) -> None:
    """The replay's side steps whose start the trace shows (``SIDE_STEPS``) start when the
    recorded ones did, however the replay's loop counts its turns: each is due exactly when its
    next recorded start is next in the timeline."""
    timed = set(SIDE_STEPS.values())
    for job in jobs:
        if job.name in timed:
            job.due = lambda evaluated, name=job.name: sequencer.step_due(name)


class SequencedExecutor:
    """An executor whose commits wait for their recorded turn: the evaluation runs at once (as
    many at a time as the run allows), the commit that follows it only in recorded order."""

    def __init__(self, inner: EvaluationExecutor, sequencer: Sequencer) -> None:
        self.inner = inner
        self.sequencer = sequencer

    @property
    def evaluator(self) -> Any:
        return self.inner.evaluator

    @evaluator.setter
    def evaluator(self, evaluator: Any) -> None:
        self.inner.evaluator = evaluator

    async def prepare(self) -> None:
        await self.inner.prepare()

    async def run(self, job: EvaluationJob) -> EvaluationOutcome:
        self.sequencer.evaluating += 1
        try:
            outcome = await self.inner.run(job)
        finally:
            self.sequencer.evaluating -= 1
        if job.candidate_id is not None:
            await self.sequencer.commit_turn(job.candidate_id)
        return outcome

    async def close(self) -> None:
        await self.inner.close()
