"""Typed events: one frozen dataclass per kind of thing that happens in a run.

The recorder writes every event to the store's ``events`` table (kind + JSON payload) in the
transaction of the change it describes, and publishes it to the run's subscribers (progress
display, web UI) once that transaction has committed. Reading a store back, :func:`decode` turns
each row into its dataclass again; a kind this code does not know (an event of a plugin that is
not loaded, or of a newer Cambrian) becomes an :class:`UnknownEvent` rather than an error.

A module defining new events (a search algorithm, say) decorates them with :func:`event_kind`.
Field names are the stored payload keys, so renaming a field is a store migration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, TypeVar

E = TypeVar("E", bound="Event")


@dataclass(frozen=True)
class Event:
    """Base class; ``kind`` is the stored name, set by :func:`event_kind`."""

    kind: ClassVar[str] = "event"

    def payload(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Self:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in payload.items() if k in names})


_KINDS: dict[str, type[Event]] = {}


def event_kind(kind: str) -> Callable[[type[E]], type[E]]:
    """Class decorator: register an event dataclass under its stored ``kind``."""

    def register(cls: type[E]) -> type[E]:
        if kind in _KINDS and _KINDS[kind] is not cls:
            raise ValueError(f"event kind {kind!r} is already taken by {_KINDS[kind].__name__}")
        cls.kind = kind
        _KINDS[kind] = cls
        return cls

    return register


@dataclass(frozen=True)
class UnknownEvent(Event):
    """A stored event whose kind is not registered here; its payload is kept as it is."""

    name: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        return dict(self.data)


@dataclass(frozen=True)
class StoredEvent:
    """An event read back from the store, with its row id and commit time."""

    id: int
    event: Event
    created_at: float

    @property
    def kind(self) -> str:
        return self.event.kind if not isinstance(self.event, UnknownEvent) else self.event.name


def decode(kind: str, payload: dict[str, Any]) -> Event:
    cls = _KINDS.get(kind)
    if cls is None:
        return UnknownEvent(name=kind, data=dict(payload))
    try:
        return cls.from_payload(payload)
    except TypeError:  # a payload missing a field this version requires
        return UnknownEvent(name=kind, data=dict(payload))


def kind_of(event: Event) -> str:
    return event.name if isinstance(event, UnknownEvent) else event.kind


# --------------------------------------------------------------------------- sessions


@event_kind("session_start")
@dataclass(frozen=True)
class SessionStarted(Event):
    pid: int


@event_kind("session_end")
@dataclass(frozen=True)
class SessionEnded(Event):
    reason: str
    # Why the session stopped, as one word (see cambrian.core.outcomes.RunOutcome); "" in runs
    # recorded before outcomes were stored.
    outcome: str = ""


@event_kind("config_override")
@dataclass(frozen=True)
class ConfigOverridden(Event):
    overrides: list[str]


# --------------------------------------------------------------------------- proposals


@event_kind("proposed")
@dataclass(frozen=True)
class CandidateProposed(Event):
    candidate_id: int
    operator: str  # diff, full, cross, fix, tune, merge...
    model: str | None  # the bandit arm, or None for an LLM-free child
    parent_id: int | None = None


@event_kind("proposal_failed")
@dataclass(frozen=True)
class ProposalFailed(Event):
    errors: list[str]
    model: str
    outcome: str = ""  # cambrian.core.outcomes.ProposalOutcomeKind


@event_kind("proposal_started")
@dataclass(frozen=True)
class ProposalStarted(Event):
    """A proposal's conversation with the model begins (the web UI's "doing now" panel)."""

    proposal: int  # numbered within the session; its ProposalEnded names the same number
    parent_id: int
    intent: str  # the mutation intent, else the patch kind (diff, full, cross, fix)
    model: str  # the bandit arm


@event_kind("proposal_ended")
@dataclass(frozen=True)
class ProposalEnded(Event):
    proposal: int
    outcome: str  # cambrian.core.outcomes.ProposalOutcomeKind
    candidate_id: int | None = None


@event_kind("evaluation_started")
@dataclass(frozen=True)
class EvaluationStarted(Event):
    """A pending child's evaluation begins; its commit (evaluated) or skip ends it."""

    candidate_id: int


@event_kind("llm_call_skipped")
@dataclass(frozen=True)
class LLMCallSkipped(Event):
    purpose: str
    reason: str


@event_kind("side_step_failed")
@dataclass(frozen=True)
class SideStepFailed(Event):
    """A loop hook's side step (scratchpad update, prompt rewrite, an algorithm's LLM step)
    produced nothing usable; it is tried again once ``retry_at`` evaluations are reached."""

    hook: str
    reason: str
    evaluated: int
    failures: int  # in a row
    retry_at: int


@event_kind("novelty_judge_error")
@dataclass(frozen=True)
class NoveltyJudgeError(Event):
    context_id: int | None
    nearest_id: int | None
    error: str


@event_kind("first_program_failed")
@dataclass(frozen=True)
class FirstProgramFailed(Event):
    attempt: int
    error: str
    context_id: int | None


@event_kind("preflight_note")
@dataclass(frozen=True)
class PreflightNote(Event):
    """Something the checks before the first LLM call found worth telling (not an error)."""

    message: str


@event_kind("environment_failing")
@dataclass(frozen=True)
class EnvironmentFailing(Event):
    """The run's evaluations so far all failed (or scored 0) the same way, because of what the
    evaluation environment lacks (``failure``: "command not found: cargo"): a warning, and the
    reason the run stops when the first few all do."""

    failure: str
    evaluations: int
    message: str


@event_kind("containment")
@dataclass(frozen=True)
class ContainmentChecked(Event):
    """What the sandbox provides on the machine of this session (one probe at its start):
    the mechanisms it lacks (empty: everything Cambrian asks for is active) and why."""

    missing: list[str] = field(default_factory=list)
    warnings: str = ""
    # What the task's settings relax, and why (e.g. the address-space limit of evaluations
    # holding a GPU), and the GPUs evaluations are leased from.
    relaxed: list[str] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)


@event_kind("comprehension")
@dataclass(frozen=True)
class ComprehensionWritten(Event):
    status: str  # ok | failed
    context_id: int | None = None
    error: str = ""


# --------------------------------------------------------------------------- evaluations


@event_kind("evaluated")
@dataclass(frozen=True)
class CandidateEvaluated(Event):
    candidate_id: int
    status: str  # the evaluation's status (ok, incorrect, timeout, memory, crashed...)
    score: float | None
    best_score: float | None
    evaluated: int  # evaluations spent against the budget so far
    generations: int  # the budget


@event_kind("duplicate")
@dataclass(frozen=True)
class DuplicateFound(Event):
    candidate_id: int
    duplicate_of: int


@event_kind("screened_out")
@dataclass(frozen=True)
class ScreenedOut(Event):
    candidate_id: int
    reason: str


@event_kind("remote_scorer_down")
@dataclass(frozen=True)
class RemoteScorerDown(Event):
    error: str
    candidate_id: int | None = None


# --------------------------------------------------------------------------- search state


@event_kind("bandit")
@dataclass(frozen=True)
class BanditSnapshot(Event):
    pulls: int
    shares: dict[str, float]
    mean_reward: dict[str, float | None] = field(default_factory=dict)


@event_kind("intent_bandit")
@dataclass(frozen=True)
class IntentBanditSnapshot(Event):
    """The intent bandit of one island (mutate/intent_bandit.py): each intent's share of the
    proposals, its mean gain per proposal (fitness; None: not tried) and its proposals."""

    island: int
    pulls: int
    shares: dict[str, float]
    gain_per_pull: dict[str, float | None] = field(default_factory=dict)
    pulls_by_arm: dict[str, int] = field(default_factory=dict)


@event_kind("step_score_check")
@dataclass(frozen=True)
class StepScoreChecked(Event):
    """A model-written improvement-step score checked against the evaluator on the initial
    program's solution and perturbed ones (search/step_score_check.py): the evaluator's and the
    score's value of each (None: invalid / not reported), and whether it was accepted."""

    candidate_id: int | None
    accepted: bool
    reason: str
    evaluator: list[float | None] = field(default_factory=list)
    model: list[float | None] = field(default_factory=list)
    evaluator_ignores_solution: bool = False  # every changed solution scored as the built one
    solution_parts: list[str] = field(default_factory=list)  # each part's kind (which moves fit)
    solution_shapes: list[str] = field(default_factory=list)  # each part, as a move gets it


@event_kind("moves_derived")
@dataclass(frozen=True)
class MovesDerived(Event):
    """The improvement step's moves the model derived from the problem and the program
    (meta/move_menu.py), or why there are none."""

    moves: list[str]
    context_id: int | None = None
    error: str = ""


@event_kind("archive_snapshot_mismatch")
@dataclass(frozen=True)
class ArchiveSnapshotMismatch(Event):
    stored: Any
    replayed: Any


@event_kind("tune")
@dataclass(frozen=True)
class TuneStepped(Event):
    parent_id: int
    evaluated: int
    trials: int
    parent_score: float | None
    tuned_score: float | None = None
    improved: bool = False
    stopped: str | None = None
    knobs: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, float] = field(default_factory=dict)
    defaults_match: bool | None = None
    curve: list[float | None] = field(default_factory=list)
    child_id: int | None = None


@event_kind("guidance_change")
@dataclass(frozen=True)
class GuidanceChanged(Event):
    """A person added, replaced, reverted or cleared guidance (the guidance table holds it)."""

    version_id: int
    action: str
    source: str  # cli | file | ui | api
    active_text: str
    target: str = ""  # "" for every prompt; "candidate:ID" / "lineage:ID" when targeted


@event_kind("control")
@dataclass(frozen=True)
class ControlChanged(Event):
    """A person paused or resumed proposals, changed a budget or asked the run to stop."""

    action: str  # pause | resume | stop | budget
    source: str
    detail: dict[str, Any] = field(default_factory=dict)
    request_id: int = 0  # the control_requests row it applied (0: a run from before it)


# --------------------------------------------------------------------------- self-reflection

# What a reflection's recommendation asks (cambrian/meta/reflection.py parses them).
FAVOUR, AVOID, TRY = "favour", "avoid", "try"
# The weight a recommendation puts on the mutation intent it names (1: not named).
INTENT_WEIGHTS = {FAVOUR: 2.0, AVOID: 0.5}


@dataclass(frozen=True)
class Recommendation:
    """One recommendation of a self-reflection: favour a mutation intent, avoid something, or
    try an idea. ``intent``: the mutation intent a favour or avoid names (None: free text)."""

    action: str  # favour | avoid | try
    text: str
    intent: str | None = None

    def note(self) -> str:
        """As a mutation prompt's note."""
        return f"Run review: {self.action} {self.text}"


@event_kind("reflection")
@dataclass(frozen=True)
class Reflection(Event):
    """A self-reflection (seed 004 §10.10): after ``evaluated`` evaluations an LLM read the
    run's own statistics (``summary`` as it was shown, ``statistics`` the numbers) and
    recommended how the search should go on (``recommendations``: Recommendation fields)."""

    evaluated: int
    summary: str
    recommendations: list[dict[str, Any]]
    statistics: dict[str, Any] = field(default_factory=dict)
    model: str = ""
    context_id: int | None = None

    def items(self) -> list[Recommendation]:
        return [Recommendation(str(r.get("action", TRY)), str(r.get("text", "")),
                               r.get("intent") or None) for r in self.recommendations]

    def intent_weights(self) -> dict[str, float]:
        """Mutation intent -> weight (2 favoured, 0.5 to avoid, however often; both: 1);
        intents the reflection did not name are left out (weight 1)."""
        named = {(item.intent, item.action) for item in self.items()
                 if item.intent and item.action in INTENT_WEIGHTS}
        weights: dict[str, float] = {}
        for intent, action in sorted(named):
            weights[intent] = weights.get(intent, 1.0) * INTENT_WEIGHTS[action]
        return weights

    def prompt_notes(self) -> list[str]:
        """The recommendations a program's author can act on: ideas to try and things to
        avoid; a favour or avoid naming an intent is the schedule's (``intent_weights``)."""
        return [item.note() for item in self.items() if item.intent is None]


@event_kind("phase_changed")
@dataclass(frozen=True)
class PhaseChanged(Event):
    """The search moved to another phase (seed 004 §10.6): comprehension, exploration,
    exploitation, polishing; ``budget_position`` is the share of the binding budget spent."""

    phase: str
    previous: str
    reason: str
    evaluated: int
    budget_position: float
    best_score: float | None = None


@event_kind("phase_extended")
@dataclass(frozen=True)
class PhaseExtended(Event):
    """A breakthrough extended the current phase to ``until`` (a budget position)."""

    phase: str
    until: float
    evaluated: int
    best_score: float | None
    reason: str


@event_kind("stagnation_recovery")
@dataclass(frozen=True)
class StagnationRecovery(Event):
    """The phase stagnated and may not move on: ``action`` (raise_temperature, switch_intents,
    restart from ``restart_parent``) steers the next proposals (seed 004 §10.6)."""

    phase: str
    action: str
    evaluated: int
    stagnant_for: int
    restart_parent: int | None = None


@event_kind("strategy_transfer")
@dataclass(frozen=True)
class StrategyTransfer(Event):
    """A strategy family leading sub-problem ``source`` (its leader ``candidate_id``) was
    offered to sub-problem ``target``, whose population had none of it (seed 004 §10.10)."""

    source: str
    target: str
    family: str
    candidate_id: int


@event_kind("subproblems_proposed")
@dataclass(frozen=True)
class SubproblemsProposed(Event):
    """The model grouped the task's test cases into ``subproblems`` (SubproblemConfig fields;
    empty: no decomposition, ``error`` says why), once per run (seed 004 §10.2)."""

    subproblems: list[dict[str, Any]]
    model: str = ""
    error: str = ""
    context_id: int | None = None


@event_kind("subsolutions_combined")
@dataclass(frozen=True)
class SubsolutionsCombined(Event):
    """The sub-problems' leaders ``sources`` combined: by the task's combiner (``child_id``
    the program it made; ``error`` why none) or proposed to the model as a crossover."""

    sources: list[int]
    method: str
    child_id: int | None
    error: str = ""
