"""The `meta:` section of the run config: the meta-scratchpad (``cambrian/meta/``)."""

from __future__ import annotations

from pydantic import Field

from cambrian.config.strict import StrictModel


class MetaConfig(StrictModel):
    """Meta-scratchpad (seed 000 §3.3, Appendix B: every 10 evaluations, up to 5 recommendations)."""

    enabled: bool = Field(
        True,
        description="Keep the meta-scratchpad: an LLM summarises what worked into "
                    "recommendations for later prompts.",
    )
    interval: int = Field(10, ge=1, description="Evaluations between two scratchpad updates.")
    max_recommendations: int = Field(
        5, ge=1, le=9,
        description="Recommendations one scratchpad update may give.",
    )
    per_prompt: int = Field(
        1, ge=0,
        description="Recommendations sampled into each mutation prompt.",
    )
    model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    max_tokens: int = Field(
        400, gt=0,
        description="Reply budget of one scratchpad update, in tokens.",
    )
