"""The `evolution:` section of the run config: generations, patch kinds, parallelism, seed and
early stops."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from cambrian.config.strict import StrictModel

PatchType = Literal["diff", "full", "cross"]


class EvolutionConfig(StrictModel):
    generations: int = Field(
        20, ge=0,
        description="Children to evaluate (the initial program excluded).",
    )
    patch_types: list[PatchType] = Field(
        default_factory=lambda: ["diff", "full", "cross"],
        description="Patch kinds drawn when mutation.schedule is off: diff, full rewrite, "
                    "crossover.",
    )
    patch_type_probs: list[float] = Field(
        default_factory=lambda: [0.45, 0.45, 0.1],
        description="Probabilities of patch_types, in the same order.",
    )
    max_patch_attempts: int = Field(3, ge=1, description="Reflexion turns within one "
                                                         "proposal's conversation after a "
                                                         "refused reply.")
    max_patch_resamples: int = Field(
        2, ge=1,
        description="Fresh starts (new parent and prompt) of a proposal whose attempts all "
                    "failed.",
    )
    max_parallel_evaluations: int = Field(
        2, ge=1,
        description="Evaluations running at once (on Ray: set it to the number of workers).",
    )
    max_proposals_in_flight: int = Field(
        1, ge=1,
        description="Proposals (LLM conversations) running at once; with a local model served "
                    "by replicas (llm.models[].replicas) at least their number, or the extra "
                    "replicas stay idle.",
    )
    seed: int = Field(
        0,
        description="Seed of the run's random generator (parent choice, intents, arms).",
    )
    repair_initial: bool = Field(
        False,
        description="A failing initial program stops the run with its error (a broken "
                    "evaluator or program would otherwise spend LLM calls); true keeps it and "
                    "asks the LLM to repair it.",
    )
    target_score: float | None = Field(
        None,
        description="Early stops (the run did its work: exit code 0). target_score: stop once "
                    "the best score reaches it (>= when maximising, <= when minimising). "
                    "patience: stop after that many evaluations in a row (children and tune "
                    "trials) without a better best score.",
    )
    patience: int | None = Field(
        None, ge=1,
        description="Stop after this many evaluations in a row (children and tune trials) "
                    "without a better best score; None: never.",
    )

    @field_validator("target_score")
    @classmethod
    def _finite_target(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("evolution.target_score must be a finite number")
        return value

    @model_validator(mode="after")
    def _check_probs(self) -> EvolutionConfig:
        if len(self.patch_types) != len(self.patch_type_probs):
            raise ValueError(
                f"patch_types has {len(self.patch_types)} entries but patch_type_probs has "
                f"{len(self.patch_type_probs)}"
            )
        if not self.patch_types:
            raise ValueError("patch_types must list at least one type")
        if any(p < 0 for p in self.patch_type_probs) or sum(self.patch_type_probs) <= 0:
            raise ValueError("patch_type_probs must be non-negative with a positive sum")
        return self
