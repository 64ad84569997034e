"""The `budget:` section of the run config: caps on money, tokens, LLM calls and wall time."""

from __future__ import annotations

from pydantic import Field

from cambrian.config.strict import StrictModel


class BudgetConfig(StrictModel):
    """Caps that stop a run cleanly, and spending pacing (seed 002 §10.9)."""

    max_cost_usd: float | None = Field(
        None, gt=0,
        description="Stop once the LLM calls have cost this much (USD); None: no cap.",
    )
    max_tokens: int | None = Field(
        None, ge=1,
        description="Stop once this many tokens (prompt and completion) were spent; None: no "
                    "cap.",
    )
    max_llm_calls: int | None = Field(
        None, ge=1,
        description="Stop after this many LLM calls; None: no cap.",
    )
    max_wall_time_s: float | None = Field(
        None, gt=0,
        description="Stop after this many seconds of wall time; None: no cap.",
    )
    pacing_factor: float = Field(
        0.8, gt=0, le=1,
        description="Restrict proposals to cheaper arms while budget left < pacing_factor * "
                    "run left.",
    )
