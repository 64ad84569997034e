"""The `mutation:` section of the run config: which intents proposals get and how they are
scheduled, the strategy menu and the improvement step's moves (cambrian/mutate/schedule.py,
strategies.py, improve_step.py)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from cambrian.config.strict import StrictModel

# An intent is a registered object (cambrian/mutate/intents.py); its name is checked against
# the registry before a run starts (search/build.py check_names), plugins' intents included.
MutationIntentName = str
ALL_MUTATION_INTENTS: list[MutationIntentName] = [
    "tuning", "local_fix", "refinement", "improve_step", "strategy", "refactor", "crossover"]
# improve_step is opt-in: its score must be computable from the program's own solution (not so
# for a hidden objective such as function_minimum's); the circle-packing example lists it.
DEFAULT_MUTATION_INTENTS: list[MutationIntentName] = [
    intent for intent in ALL_MUTATION_INTENTS if intent != "improve_step"]


class MutationConfig(StrictModel):
    """Mutation intents and their schedule (seed 002 §10.1, §10.6, §10.10; see
    ``cambrian/mutate/schedule.py``). ``linear``: each proposal gets an intent (tuning, local_fix,
    refinement, improve_step -> diff; strategy, refactor -> full; crossover -> cross), weighted
    from exploration towards exploitation over the run and by each intent's recent success. ``off``: the patch
    kind is drawn from ``evolution.patch_type_probs`` as it always was."""

    schedule: Literal["off", "linear"] = "linear"
    types: list[MutationIntentName] = Field(default_factory=lambda: list(DEFAULT_MUTATION_INTENTS))
    explore_start: float = Field(0.5, ge=0, le=1)  # exploration share at the start (seed 002 §10.6)
    explore_end: float = Field(0.1, ge=0, le=1)  # ...and its lower bound late in the run
    window: int = Field(20, ge=1)  # recent uses of an intent its success rate is measured on
    floor: float = Field(0.1, gt=0, le=1)  # added to every success rate, so no intent starves
    # A `strategy` proposal builds in one concrete method drawn from a menu
    # (cambrian/mutate/strategies.py): these task-specific strategies, the problem brief's
    # approaches and, with general_strategies, general methods (local search, multi-start...).
    strategies: list[str] = Field(default_factory=list)
    general_strategies: bool = True
    # An `improve_step` proposal (opt-in: list it in `types`) wires a hill-climbing loop after
    # the program's build and has the model write its score and its move
    # (cambrian/mutate/improve_step.py); the move makes one of these task-specific kinds of
    # change or, with general_moves, a general one (nudge, swap, reverse...). A task whose
    # solution is not an order turns general_moves off and names its own moves: the 1.5B
    # applied "swap" to circles, which changes nothing a sum of radii counts.
    improve_moves: list[str] = Field(default_factory=list)
    general_moves: bool = True
    # A file of the task folder holding the step's score function (`score_<entry>`), written by
    # the task's author as a judged task's scorer is: the step is wired with it and its
    # proposals ask the model for the move only (cambrian/mutate/step_wiring.py).
    improve_score: str | None = None
    # Seed 002 §10.5 model selection per kind of change: the model labels each intent may use
    # (e.g. strategy and crossover on the strongest model, tuning on the cheapest); an intent
    # not listed uses any. A search phase's models narrow it further.
    intent_models: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("schedule", mode="before")
    @classmethod
    def _yaml_switch(cls, value: Any) -> Any:
        # YAML reads an unquoted `off` as false (and `on` as true).
        return {False: "off", True: "linear"}.get(value, value) if isinstance(value, bool) else value

    @model_validator(mode="after")
    def _check(self) -> MutationConfig:
        if not self.types:
            raise ValueError("mutation.types must list at least one intent")
        if len(set(self.types)) != len(self.types):
            raise ValueError("mutation.types lists an intent twice")
        if self.explore_end > self.explore_start:
            raise ValueError("mutation.explore_end must not exceed mutation.explore_start")
        if not self.general_moves and not self.improve_moves:
            raise ValueError("mutation.general_moves is off and mutation.improve_moves is "
                             "empty: an improvement step would have no move to make")
        return self
