"""The `comprehension:` section of the run config: the problem brief written before the first
proposal."""

from __future__ import annotations

from pydantic import Field

from cambrian.config.strict import StrictModel


class ComprehensionConfig(StrictModel):
    """Problem comprehension (seed 004 §4 "Phase 1", §9 Component 1): before the first proposal an
    LLM reads the problem statement once and writes a structured brief (summary, input/output,
    scoring, constraints, candidate approaches) that every mutation prompt then carries. Acts
    only when the task has a problem statement."""

    enabled: bool = Field(
        True,
        description="Write the problem brief before the first proposal (only when the task "
                    "has a problem statement).",
    )
    model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    max_tokens: int = Field(900, gt=0, description="Reply budget of the brief, in tokens.")
    temperature: float = Field(
        0.2, ge=0, le=2,
        description="Sampling temperature of the brief: low, for an accurate reading (seed "
                    "004 §4).",
    )
    max_prompt_chars: int = Field(
        3000, ge=200,
        description="Characters of the brief shown in each mutation prompt.",
    )
