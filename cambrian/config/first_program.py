"""The `first_program:` section of the run config: an LLM-written first program for a task
without one (``cambrian/search/prelude.py``)."""

from __future__ import annotations

from pydantic import Field

from cambrian.config.strict import StrictModel


class FirstProgramConfig(StrictModel):
    """A task with a problem statement but no initial program: an LLM writes the first program,
    which must pass the task's own evaluation before evolution starts."""

    attempts: int = Field(
        3, ge=1,
        description="Each failed attempt's error is fed back to the next.",
    )
    model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    max_tokens: int = Field(
        3072, gt=0,
        description="Reply budget of one attempt at the first program, in tokens.",
    )
    temperature: float = Field(
        0.4, ge=0, le=2,
        description="Sampling temperature of the first program's attempts.",
    )
