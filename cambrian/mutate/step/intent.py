"""The ``improve_step`` intent: the framework wires a hill-climbing loop after the parent's entry
function (`wiring.scaffold`, the language's half), and one proposal has the model write one of
its functions: the score while it is a stub, then the move, of a kind drawn from the menu's
moves. A parent whose step already has its score written by a child sends the proposal on to
that child, so the next proposal writes the move (selection alone rarely comes back to a child
that scores like its parent)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cambrian.core.events import StepScoreChecked
from cambrian.core.status import CandidateStatus
from cambrian.lang.language import Language
from cambrian.mutate.focus import NOTE_KEY as FOCUS_NOTE
from cambrian.mutate.intent import IntentServices, MutationIntent, PreparedIntent
from cambrian.mutate.step.python import SCORE_PREFIX, Scaffold
from cambrian.mutate.step.score_check import AGREES
from cambrian.mutate.step.score_feedback import NOTE_TAG as REFUSED_NOTE
from cambrian.mutate.step.score_feedback import refused_score_note
from cambrian.mutate.step.wiring import (
    InitialEntry,
    definition_text,
    entry_of,
    scaffold,
    step_instruction,
    with_definition,
)
from cambrian.mutate.strategies import NOTE_KEY as STRATEGY_NOTE
from cambrian.mutate.strategies import STEP_MOVES, unfitting_moves
from cambrian.task.program_files import is_bundle

IGNORED_CHECKS = 2  # checks finding the evaluator blind to the solution before the step stops


@dataclass
class ScoreChecks:
    """What the run's checks of model-written step scores found (read in order): every check,
    the blind verdicts by their values (a score checked again after a resume counts once),
    whether one found a score agreeing with the evaluator (which then does read the
    solution), and the solution's parts, their kinds and descriptions, as last reported."""

    after: int = 0  # the last check event read
    seen: list[StepScoreChecked] = field(default_factory=list)
    blind: set[tuple[tuple[float | None, ...], tuple[float | None, ...]]] = field(
        default_factory=set)
    agreed: bool = False
    parts: list[str] = field(default_factory=list)
    shapes: list[str] = field(default_factory=list)

    def add(self, check: StepScoreChecked) -> None:
        self.seen.append(check)
        if check.evaluator_ignores_solution:
            self.blind.add((tuple(check.evaluator), tuple(check.model)))
        self.agreed = self.agreed or (check.accepted and check.reason.startswith(AGREES))
        if check.solution_parts:
            self.parts, self.shapes = list(check.solution_parts), list(check.solution_shapes)


@dataclass(frozen=True)
class StepIntent(MutationIntent):
    def _scaffold(self, parent_id: int, services: IntentServices) -> Scaffold | None:
        """The parent with the step wired in (found once per parent); None: no step fits."""
        if services.language is None:
            return None
        found = services.cache(self.name)
        if parent_id not in found:
            source = services.view(parent_id).source
            # The step wires into a one-file program; a program of several files takes none.
            found[parent_id] = (None if is_bundle(source) else
                                scaffold(source, services.language, services.given_score,
                                         self._entry(services)))
        step: Scaffold | None = found[parent_id]
        return step

    def _entry(self, services: IntentServices) -> str | None:
        """The initial program's entry function, where the step wires in any parent that
        defines it."""
        assert services.language is not None
        entry: InitialEntry = services.cache(self.name + ":entry").setdefault(
            "initial", InitialEntry(services.store, services.language))
        return entry()

    def usable(self, parent_id: int, services: IntentServices) -> bool:
        return (self._scaffold(parent_id, services) is not None
                and not self._evaluator_ignores_solution(services))

    def _evaluator_ignores_solution(self, services: IntentServices) -> bool:
        """Whether checks of two scores found that the evaluator rates every changed solution
        as the one built (function_minimum's scores the calls of f, not the point returned):
        no step can raise such a score, so the run stops spending proposals on it."""
        checks = self._checks(services)
        return not checks.agreed and len(checks.blind) >= IGNORED_CHECKS

    def _checks(self, services: IntentServices) -> ScoreChecks:
        """The run's score checks so far, the store's newer ones read in."""
        checks: ScoreChecks = services.cache(self.name + ":checks").setdefault("read", ScoreChecks())
        for stored in services.store.events.list(StepScoreChecked, after_id=checks.after):
            checks.after = stored.id
            if isinstance(stored.event, StepScoreChecked):
                checks.add(stored.event)
        return checks

    @staticmethod
    def _parts_note(step: Scaffold, checks: ScoreChecks) -> tuple[str, ...]:
        """What each part of the solution is, as the score check found the program builds it
        (a 1.5B model took a float for an array and called ``len`` on it)."""
        if len(checks.shapes) != len(step.solution):
            return ()
        return ("The solution's parts, as the program builds them: " + "; ".join(
            f"`{name}` is {shape}" for name, shape in zip(step.solution, checks.shapes)) + ".",)

    def _scored_child(self, parent_id: int, services: IntentServices) -> int | None:
        """The newest correct child of the parent whose step has its score written and its
        move still a stub."""
        for child in reversed(services.store.candidates.children(parent_id)):
            if child.status is not CandidateStatus.CORRECT:
                continue
            step = self._scaffold(child.id, services)
            if step is not None and step.stubs == {step.change}:
                return child.id
        return None

    def _checked_score(self, step: Scaffold, services: IntentServices) -> Scaffold | None:
        """``step`` with the score of the newest correct child that wrote one for a step of
        the same form (the same score function and parameters), None when there is none.

        A score is about the problem, not the parent: once a child's score has passed the
        check against the evaluator, a step wired into another parent takes it and the
        proposal writes the move (else every parent drawn asks for its own score first, and
        the step's two calls seldom meet: 5 score proposals and no move in a 40-call run)."""
        if services.language is None:
            return None
        found = services.cache(self.name + ":scores")
        for row in services.store.candidates.correct_with_note(
                FOCUS_NOTE, step.score, found.get("scanned", 0)):
            found["scanned"] = row.id
            donor = self._scaffold(row.id, services)
            if donor is None or donor.score in donor.stubs:
                continue
            text = definition_text(donor.source, donor.score, services.language)
            if text is not None:
                found[donor.parameters] = text
        text = found.get(step.parameters)
        if text is None:
            return None
        wired = scaffold(with_definition(step.source, step.score, text, services.language),
                         services.language, entry=self._entry(services))
        return wired if wired is not None and wired.score not in wired.stubs else None

    def prepare(self, parent_id: int, services: IntentServices,
                rng: np.random.Generator) -> PreparedIntent:
        step = self._scaffold(parent_id, services)
        if step is None:
            return PreparedIntent(parent_id)
        source = step.source
        if step.score in step.stubs:
            scored_child = self._scored_child(parent_id, services)
            if scored_child is not None:  # a child already wrote this step's score: its move next
                parent_id = scored_child
                step = self._scaffold(parent_id, services)
                assert step is not None
                source = step.source
            else:  # a score another step's child wrote, which the evaluator's check let through
                reused = self._checked_score(step, services)
                if reused is not None:
                    step, source = reused, reused.source
        tags: dict[str, Any] = {FOCUS_NOTE: step.to_write(rng)}
        checks = self._checks(services)
        notes = self._parts_note(step, checks)
        if tags[FOCUS_NOTE] == step.score and services.language is not None:
            refused = refused_score_note(checks.seen, services.store, step.score,
                                         services.language, self._entry(services))
            if refused is not None:
                notes, tags[REFUSED_NOTE] = (refused[0], *notes), refused[1]
        if tags[FOCUS_NOTE] == step.change and services.strategies is not None:
            unfitting = unfitting_moves(checks.parts)
            choice = services.strategies.choose(rng, parent_id, moves=True, exclude=unfitting)
            if choice is not None:
                tags[STRATEGY_NOTE] = choice.text
        # The model works on the parent with the step wired in (it behaves the same).
        return PreparedIntent(parent_id, source=source, tags=tags, notes=notes)

    def task_text(self, source: str, language: Language, *, given_score: str | None = None,
                  strategy: str | None = None, focus: str | None = None) -> str:
        # The entry the proposal's function belongs to: the one ``prepare`` wired the step at.
        step = scaffold(source, language, given_score, entry_of(focus) if focus else None)
        if step is None:
            return super().task_text(source, language, strategy=strategy, focus=focus)
        return step_instruction(step, focus or step.score, strategy or STEP_MOVES[0])

    def check_options(self, tags: dict[str, Any]) -> dict[str, Any]:
        return {"step_function": tags.get(FOCUS_NOTE)}

    def prepares(self, notes: dict[str, Any]) -> bool:
        return str(notes.get(FOCUS_NOTE, "")).startswith(SCORE_PREFIX)


IMPROVE_STEP = StepIntent(
    "improve_step", "diff", "exploit", 0.3,
    "Write an improvement step that takes the solution the program builds and returns a "
    "better one.", temperature=0.4, draws_method=True)
