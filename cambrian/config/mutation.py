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
# Every intent is on by default; each is offered only where the parent's shape allows it
# (improve_step: an entry function returning a solution the step's loop can change). A score
# the model writes for the step is checked against the evaluator before it is used
# (mutation.score_check), which keeps a hidden objective such as function_minimum's safe.
DEFAULT_MUTATION_INTENTS: list[MutationIntentName] = list(ALL_MUTATION_INTENTS)


class MutationConfig(StrictModel):
    """Mutation intents and their schedule (seed 002 §10.1, §10.6, §10.10; see
    ``cambrian/mutate/schedule.py``). ``linear``: each proposal gets an intent (tuning, local_fix,
    refinement, improve_step -> diff; strategy, refactor -> full; crossover -> cross), weighted
    from exploration towards exploitation over the run and by each intent's recent success. ``off``: the patch
    kind is drawn from ``evolution.patch_type_probs`` as it always was."""

    schedule: Literal["off", "linear"] = Field(
        "linear",
        description="linear: each proposal gets a mutation intent, weighted from exploration "
                    "towards exploitation and by recent success; off: the patch kind is drawn "
                    "from evolution.patch_type_probs.",
    )
    types: list[MutationIntentName] = Field(
        default_factory=lambda: list(DEFAULT_MUTATION_INTENTS),
        description="The mutation intents proposals may get (registered names: tuning, "
                    "local_fix, refinement, improve_step, strategy, refactor, crossover, or a "
                    "plugin's); each is offered where the parent's shape allows it.",
    )
    opening: list[MutationIntentName] = Field(
        default_factory=lambda: ["improve_step"],
        description="Intents the run opens with: the first proposals get them, one each in "
                    "this order, where the parent allows it, before the mix is drawn (an "
                    "intent not in `types` is skipped). The improvement step opens by "
                    "default: it has the longest way to a first gain (its score is written "
                    "and checked before a move can be) and one good move is worth many "
                    "evaluations. []: the mix from the first proposal.",
    )
    explore_start: float = Field(
        0.5, ge=0, le=1,
        description="Exploration share of the intents at the start of the run.",
    )
    explore_end: float = Field(
        0.1, ge=0, le=1,
        description="Exploration share late in the run (its lower bound).",
    )
    window: int = Field(
        20, ge=1,
        description="Recent uses of an intent its success rate is measured on.",
    )
    floor: float = Field(
        0.1, gt=0, le=1,
        description="Added to every success rate, so no intent starves.",
    )
    strategies: list[str] = Field(
        default_factory=list,
        description="A `strategy` proposal builds in one concrete method drawn from a menu "
                    "(cambrian/mutate/strategies.py): these task-specific strategies, the "
                    "problem brief's approaches and, with general_strategies, general methods "
                    "(local search, multi-start...).",
    )
    general_strategies: bool = Field(
        True,
        description="Add general methods (local search, multi-start...) to the strategy menu "
                    "besides the task's strategies and the brief's approaches.",
    )
    improve_moves: list[str] = Field(
        default_factory=list,
        description="An `improve_step` proposal wires a "
                    "hill-climbing loop after the program's build and has the model write its "
                    "score and its move (cambrian/mutate/improve_step.py); the move makes one "
                    "of these task-specific kinds of change or, with general_moves, a general "
                    "one (nudge, swap, reverse...). A task whose solution is not an order "
                    "turns general_moves off and names its own moves: the 1.5B applied \"swap\" "
                    "to circles, which changes nothing a sum of radii counts.",
    )
    general_moves: bool = Field(
        True,
        description="Add general moves (nudge, swap, reverse...) to the improvement step's "
                    "menu besides improve_moves.",
    )
    improve_score: str | None = Field(
        None,
        description="A file of the task folder holding the step's score function "
                    "(`score_<entry>`), written by the task's author as a judged task's "
                    "scorer is: the step is wired with it and its proposals ask the model for "
                    "the move only (cambrian/mutate/step_wiring.py).",
    )
    intent_models: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Seed 002 §10.5 model selection per kind of change: the model labels each "
                    "intent may use (e.g. strategy and crossover on the strongest model, "
                    "tuning on the cheapest); an intent not listed uses any. A search phase's "
                    "models narrow it further.",
    )
    intent_bandit: bool = Field(
        True,
        description="Weight the intents (and an improvement step's moves) per island by a UCB1 "
                    "bandit over the gain each proposal realised (cambrian/mutate/"
                    "intent_bandit.py), recorded as intent_bandit events; off: by each "
                    "intent's recent success rate over `window` uses.",
    )
    bandit_exploration: float = Field(
        0.5, ge=0,
        description="The intent bandit's exploration weight: the bonus of an intent or move "
                    "tried less often than the others.",
    )
    score_check: int = Field(
        4, ge=0, le=16,
        description="Perturbed solutions a model-written improvement-step score is checked on "
                    "against the evaluator (with the unperturbed one): a score that orders two "
                    "valid solutions against the evaluator's order is refused. 0: unchecked.",
    )
    derive_moves: bool = Field(
        True,
        description="Where improve_moves is empty, ask the model once per run for a menu of "
                    "moves fitting the problem and the program (what a solution is made of, "
                    "which changes keep it valid); the intent bandit learns which pay. The "
                    "general moves stay on the menu while general_moves is on.",
    )

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
        if not self.general_moves and not self.improve_moves and not self.derive_moves:
            raise ValueError("mutation.general_moves is off, mutation.improve_moves is empty "
                             "and mutation.derive_moves is off: an improvement step would "
                             "have no move to make")
        return self
