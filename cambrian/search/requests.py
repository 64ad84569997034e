"""What one proposal is asked to do: the parent and inspirations the selector chose, the patch
kind and mutation intent, and what every prompt carries beside them (the person's guidance, the
notes and system prompt the loop hooks give: scratchpad recommendations, a co-evolved system
prompt). Tags naming each of these go into the child's notes so the trace tells what every
proposal saw."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from cambrian.config import RunConfig
from cambrian.core.hooks import LoopHook, Steering
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.case_feedback import stored_cases
from cambrian.evaluate.judge.verdicts import Verdict
from cambrian.lang.languages import Language
from cambrian.meta.guidance import GuidanceBoard
from cambrian.mutate.intent import IntentServices, PreparedIntent
from cambrian.mutate.intents import INTENTS
from cambrian.mutate.kept_notes import KeptNote
from cambrian.mutate.prompts import ProgramView, truncate_middle
from cambrian.mutate.proposer import ProposalRequest
from cambrian.mutate.strategies import StrategyMenu
from cambrian.search.algorithm import ParentSample, Selector
from cambrian.search.history import lineage_history_note, tried_ideas_note
from cambrian.search.recycling import deletion_history_note
from cambrian.store.store import Store

MAX_TEMPERATURE = 1.5  # a phase's scale never pushes a proposal past this


class RequestBuilder:
    def __init__(
        self,
        config: RunConfig,
        store: Store,
        rng: np.random.Generator,
        selector: Callable[[], Selector],
        evaluated: Callable[[], int],
        *,
        guidance: GuidanceBoard,
        hooks: list[LoopHook],
        mutation_schedule: Any = None,
        strategies: StrategyMenu | None = None,
        language: Language | None = None,
        objective: Objective = Objective(),
        given_score: str | None = None,
    ) -> None:
        self.config = config
        self.given_score = given_score  # the improvement step's score the task gives
        self.objective = objective
        self.store = store
        self.rng = rng
        self.selector = selector
        self.evaluated = evaluated
        self.guidance = guidance
        self.hooks = hooks
        self.mutation_schedule = mutation_schedule
        self.strategies = strategies
        self.language = language
        self._views: dict[int, ProgramView] = {}
        self.intent_services = IntentServices(self.view, store, language, strategies,
                                              given_score)

    # ------------------------------------------------------------------ program views

    def view(self, candidate_id: int) -> ProgramView:
        if candidate_id not in self._views:
            row = self.store.candidates.get(candidate_id)
            result = self.store.evaluations.latest(candidate_id)
            error = ""
            if result is not None and not result.correct:
                error = result.error or result.stderr[-1500:]
            self._views[candidate_id] = ProgramView(
                id=row.id, source=row.source or "", score=row.score,
                correct=row.status is CandidateStatus.CORRECT,
                public=result.public if result else {},
                text_feedback=result.text_feedback if result else "",
                error=error,
                cases=stored_cases(result.extra) if result else (),
            )
        return self._views[candidate_id]

    def forget(self, candidate_id: int) -> None:
        """Drop a cached view (the candidate's evaluation just changed)."""
        self._views.pop(candidate_id, None)

    # ------------------------------------------------------------------ requests

    def next(self, generation: int) -> ProposalRequest:
        """The parent request plus the person's guidance (first, so it survives a tight
        context) and the co-evolved system prompt."""
        request = self._parent_request(generation)
        guidance, tags = self._human_guidance(request.parent.id)
        failure, failure_tags = failed_attempt_note(self.store, request.parent.id)
        preamble, prompt_tags = self._system_prompt()
        lineage, lineage_tags = lineage_history_note(
            self.store, request.parent.id, self.config.prompt.history_programs,
            self.objective)
        tried, tried_tags = tried_ideas_note(
            self.store, request.parent.id, self.config.prompt.tried_ideas, self.objective)
        history, history_tags = deletion_history_note(  # last: the first note a tight prompt drops
            self.store, self.config.trace_feedback, request.parent.id)
        return replace(request,
                       notes=guidance + failure + request.notes + lineage + tried + history,
                       preamble=preamble, tags={**request.tags, **tags, **failure_tags,
                                                **prompt_tags, **lineage_tags, **tried_tags,
                                                **history_tags})

    def _parent_request(self, generation: int) -> ProposalRequest:
        sample = self.selector().sample(self.rng)
        if sample is None:  # no correct program yet: repair a failing one
            failed = [r for r in self.store.candidates.list(CandidateStatus.INCORRECT) if r.source]
            parent = failed[int(self.rng.integers(len(failed)))]
            island = int(self.rng.integers(self.config.database.num_islands))
            return ProposalRequest(generation, island, "fix", self.view(parent.id))
        steering = self._steering()
        if sample.intent_weights:
            steering = steering.combined(Steering(intent_weights=sample.intent_weights))
        if steering.restart_parent is not None and self.store.candidates.exists(
                steering.restart_parent):
            sample = replace(sample, parent_id=steering.restart_parent)
        if steering.inspirations is not None:
            sample = replace(sample, inspiration_ids=tuple(
                i for i in steering.inspirations if self.store.candidates.exists(i)))
        follow_up = self._follow_up(steering)
        if follow_up is not None:
            child, follow_intent, island = follow_up
            sample = ParentSample(child, island)
        inspiration_ids = list(sample.inspiration_ids)
        if follow_up is not None:
            kind, intent = INTENTS.get(follow_intent).kind, follow_intent
        elif steering.intent is not None and not sample.kind:
            kind, intent = INTENTS.get(steering.intent).kind, steering.intent
        else:
            kind, intent = ((sample.kind, None) if sample.kind
                            else self.choose_kind(bool(inspiration_ids),
                                                  self._unusable_intents(sample.parent_id),
                                                  steering.intent_weights, sample.island))
        if kind == "cross" and len(inspiration_ids) > 1:
            inspiration_ids = [inspiration_ids[int(self.rng.integers(len(inspiration_ids)))]]
        notes = ((sample.guidance,) if sample.guidance else ()) + tuple(
            note for hook in self.hooks for note in hook.prompt_notes(self.rng))
        tags: dict[str, Any] = {**steering.tags, **({"intent": intent} if intent else {})}
        if follow_up is not None:
            tags["follows_up"] = True  # the proposal its parent prepared, made next
        prepared = (INTENTS.get(intent).prepare(sample.parent_id, self.intent_services, self.rng)
                    if intent else PreparedIntent(sample.parent_id))
        parent = self.view(prepared.parent_id)
        if prepared.source is not None:
            parent = replace(parent, source=prepared.source)
        tags.update(prepared.tags)
        notes = prepared.notes + notes
        temperature = None
        if steering.intent_temperatures and intent:
            base = INTENTS.get(intent).temperature
            if base is not None:
                temperature = round(min(MAX_TEMPERATURE, base * steering.temperature_scale), 3)
        models = steering.models
        per_intent = frozenset(self.config.mutation.intent_models.get(intent or "", ()))
        if per_intent:
            models = models & per_intent or models if models else per_intent
        return ProposalRequest(
            generation, sample.island, kind, parent,
            tuple(self.view(i) for i in inspiration_ids), notes, tags=tags,
            temperature=temperature, models=models,
        )

    def _steering(self) -> Steering:
        """What the hooks say of the next proposal (a search phase), combined."""
        steering = Steering()
        for hook in self.hooks:
            said = hook.steer(self.rng)
            if said is not None:
                steering = steering.combined(said)
        return steering

    def _follow_up(self, steering: Steering) -> tuple[int, str, int] | None:
        """The child that prepared the next proposal (`MutationSchedule.follow_up`), unless a
        person or a search phase named the parent or the intent of this one."""
        schedule = self.mutation_schedule
        if (schedule is None or steering.restart_parent is not None
                or steering.intent is not None):
            return None
        return schedule.follow_up(lambda child: bool(self.store.candidates.children(child)))

    def _unusable_intents(self, parent_id: int) -> set[str]:
        """The scheduled intents the parent gives nothing to work on."""
        schedule = self.mutation_schedule
        intents = schedule.intents if schedule is not None else []
        return {intent.name for intent in intents
                if not intent.usable(parent_id, self.intent_services)}

    def choose_kind(self, has_inspirations: bool, unusable: Collection[str] = (),
                    intent_weights: Mapping[str, float] | None = None,
                    island: int = 0) -> tuple[str, str | None]:
        """(patch kind, mutation intent); the intent is None when the schedule is off."""
        if self.mutation_schedule is not None:
            intent = self.mutation_schedule.choose(self.rng, self.evaluated(), has_inspirations,
                                                   unusable, intent_weights, island or 0)
            if intent is not None:
                return intent.kind, intent.name
        evo = self.config.evolution
        kinds = list(evo.patch_types)
        probs = np.array(evo.patch_type_probs, dtype=float)
        if not has_inspirations and "cross" in kinds:
            probs[kinds.index("cross")] = 0.0
        if probs.sum() <= 0:
            return ("diff" if "diff" in kinds else "full"), None
        return kinds[int(self.rng.choice(len(kinds), p=probs / probs.sum()))], None

    def _human_guidance(self, parent_id: int) -> tuple[tuple[str, ...], dict[str, Any]]:
        """The guidance for every prompt, then guidance targeted at the parent or its lineage
        (kept notes: a prompt shortens them visibly rather than dropping them)."""
        version = self.guidance.sync_file()
        notes: tuple[str, ...] = ()
        tags: dict[str, Any] = {}
        if version.id:
            tags["guidance_id"] = version.id
            if version.text:
                notes += (KeptNote("Guidance from the person running this search: "
                                   f"{version.text}"),)
        targeted = self.guidance.for_candidate(parent_id)
        if targeted:
            notes += tuple(KeptNote("Guidance from the person running this search, for this "
                                    f"program: {v.text}") for v in targeted)
            tags["targeted_guidance_ids"] = [v.id for v in targeted]
        return notes, tags

    def _system_prompt(self) -> tuple[str | None, dict[str, Any]]:
        for hook in self.hooks:
            chosen = hook.system_prompt(self.rng)
            if chosen is not None:
                return chosen
        return None, {}


# ---------------------------------------------------------------------- failed-attempt note
# A child that fails is never a parent, so without this note its compiler or runtime message
# would reach no prompt once some program is correct. The note goes to proposals that mutate the
# same parent (not to the whole island): the message names lines and identifiers of code derived
# from that parent, which would only mislead a proposal working on another program.

FAILED_ATTEMPT_CHARS = 600  # of the message; the whole note stays under ~700 characters
_FAILED_STATUS = {"incorrect": "incorrect result", "timeout": "time limit exceeded",
                  "memory": "memory limit exceeded", "disk": "disk limit exceeded",
                  "crashed": "runtime error",
                  "invalid_output": "the evaluator's results were unusable"}


def _verdict_meaning(code: Any) -> str | None:
    """"compile error" for a judge's "CE" and so on; None for anything else."""
    try:
        return Verdict(str(code)).meaning
    except ValueError:
        return None


def failed_attempt_note(store: Store, parent_id: int) -> tuple[tuple[str, ...], dict[str, Any]]:
    """(notes, tags): "your previous attempt from this program failed: ..." while the latest
    evaluated child of ``parent_id`` failed (a later child that ran clears it)."""
    child = store.candidates.latest_evaluated_child(parent_id)
    if child is None or child.status is not CandidateStatus.INCORRECT:
        return (), {}
    result = store.evaluations.latest(child.id)
    if result is None:
        return (), {}
    verdicts = result.extra.get("verdicts") or {}
    failed = [f"{_verdict_meaning(v) or v} on {n} case{'s' if n != 1 else ''}"
              for v, n in sorted(verdicts.items()) if v != "AC" and n]
    verdict = (_verdict_meaning(result.extra.get("verdict"))
               or ", ".join(failed) or _FAILED_STATUS.get(result.status, result.status))
    message = (result.error or result.stderr[-4 * FAILED_ATTEMPT_CHARS:]
               or result.text_feedback).strip()
    if message.startswith("compile error (") and "\n" in message:
        message = message.split("\n", 1)[1]  # drop the compiler command line
    message = truncate_middle(message, FAILED_ATTEMPT_CHARS) or "(no message)"
    note = f"Your previous attempt from this program failed: {verdict}:\n{message}"
    return (note,), {"failed_attempt": child.id}
