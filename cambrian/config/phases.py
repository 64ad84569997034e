"""The `phases:` section: the search phases of seed 004 §10.6 (comprehension, exploration,
exploitation, polishing), each with its own intent mix, temperature and models, its share of
the budget (§10.9), adaptive transitions (§10.10) and stagnation recovery (§10.6). The loop
part is `cambrian/search/phases.py`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from cambrian.config.strict import StrictModel

SearchPhase = Literal["exploration", "exploitation", "polishing"]
SEARCH_PHASES: tuple[SearchPhase, ...] = ("exploration", "exploitation", "polishing")


def _default_mix() -> dict[str, dict[str, float]]:
    # Seed 004 §10.6: exploration favours strategy changes and crossover of diverse programs;
    # exploitation refinement, the improvement step and crossover between the best; polishing
    # micro-optimisation and constant tuning. Multipliers of the schedule's own weights.
    return {
        "exploration": {"strategy": 2.0, "refactor": 1.5, "crossover": 1.0, "tuning": 0.3,
                        "local_fix": 0.6, "refinement": 0.8, "improve_step": 0.8},
        "exploitation": {"strategy": 0.4, "refactor": 0.5, "crossover": 1.5, "tuning": 1.0,
                         "local_fix": 1.5, "refinement": 1.5, "improve_step": 1.5},
        "polishing": {"strategy": 0.1, "refactor": 0.1, "crossover": 0.5, "tuning": 2.0,
                      "local_fix": 2.0, "refinement": 1.0, "improve_step": 1.0},
    }


class PhasesConfig(StrictModel):
    """Search phases (seed 004 §10.5, §10.6, §10.9, §10.10). Off by default; ``--search contest``
    turns them on. Comprehension is the problem brief (``comprehension:``), written before the
    first proposal; the three search phases follow it."""

    enabled: bool = Field(
        False,
        description="Run the search phases (exploration, exploitation, polishing); --search "
                    "contest turns them on.",
    )
    budget_shares: dict[SearchPhase, float] = Field(
        default_factory=lambda: {"exploration": 0.45, "exploitation": 0.40, "polishing": 0.15},
        description="Seed 004 §10.9's split of the budget (comprehension 5 %, exploration 40 "
                    "%, exploitation 40 %, polishing 15 %), comprehension's share given to "
                    "exploration since its brief is one call. A share is of the binding "
                    "budget: evaluations, LLM calls, wall time or money, whichever runs out "
                    "first.",
    )
    intent_mix: dict[SearchPhase, dict[str, float]] = Field(
        default_factory=_default_mix,
        description="Per phase, multipliers of the mutation schedule's weight of each intent.",
    )
    temperature_scale: dict[SearchPhase, float] = Field(
        default_factory=lambda: {"exploration": 1.1, "exploitation": 0.85, "polishing": 0.6},
        description="Seed 002 §10.5: each intent's base temperature, times this per phase "
                    "(exploration hot, polishing cool).",
    )
    models: dict[SearchPhase, list[str]] = Field(
        default_factory=dict,
        description="Model labels (llm.models[].label) each phase may use (seed 004 §10.5 "
                    "phase-aware model selection); a phase not listed uses every model.",
    )
    stagnation: int = Field(
        8, ge=2,
        description="Evaluations without a better best that count as stagnation (seed 004 "
                    "§10.6).",
    )
    min_strategies: int = Field(
        3, ge=1,
        description="Exploration moves on early only once this many strategy niches exist "
                    "(seed 004 §10.10: \"at least 3 viable strategies\"), when niches are "
                    "tagged; and never before this share of its own budget is spent.",
    )
    min_phase_share: float = Field(
        0.3, ge=0, le=1,
        description="Share of its own budget a phase spends before it may move on early.",
    )
    breakthrough: float = Field(
        0.02, gt=0,
        description="A new best this much better (relative) than the phase's starting best is "
                    "a breakthrough: the phase is extended by `extension` of the budget "
                    "(taken from the phases after it).",
    )
    extension: float = Field(
        0.1, ge=0, le=0.5,
        description="Share of the budget a breakthrough adds to the current phase (taken from "
                    "the phases after it).",
    )
    recovery: list[Literal["raise_temperature", "switch_intents", "restart"]] = Field(
        default_factory=lambda: ["raise_temperature", "switch_intents", "restart"],
        description="Stagnation recovery, in turn: raise the temperature, switch the intent "
                    "mix towards exploration, restart from a diverse elite (seed 004 §10.6 "
                    "StagnationDetector).",
    )
    recovery_proposals: int = Field(4, ge=1, description="Proposals one stagnation recovery "
                                                         "lasts.")

    @model_validator(mode="after")
    def _check(self) -> PhasesConfig:
        missing = [phase for phase in SEARCH_PHASES if phase not in self.budget_shares]
        if missing:
            raise ValueError(f"phases.budget_shares lacks {', '.join(missing)}")
        total = sum(self.budget_shares.values())
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"phases.budget_shares must add up to 1 (they add up to {total:g})")
        if any(share < 0 for share in self.budget_shares.values()):
            raise ValueError("phases.budget_shares must not be negative")
        return self
