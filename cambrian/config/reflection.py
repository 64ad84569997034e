"""The `reflection:` section of the run config: self-reflection (seed 004 §10.10; see
``cambrian/meta/reflection.py``)."""

from __future__ import annotations

from pydantic import Field

from cambrian.config.strict import StrictModel


class ReflectionConfig(StrictModel):
    """Every ``interval`` evaluations an LLM reads the run's own statistics (success per
    mutation intent, model, strategy niche and phase; the best score's trajectory; the commonest
    failures) and recommends intents to favour, things to avoid and ideas to try. Its ideas reach
    later mutation prompts (``per_prompt`` of them each); the intents it names are weights a
    phase controller may read (``cambrian.store.reflections.latest_reflection``). Off by
    default: one more LLM call every ``interval`` evaluations."""

    enabled: bool = Field(
        False,
        description="Run self-reflection: every interval evaluations an LLM reads the run's "
                    "statistics and recommends intents and ideas.",
    )
    interval: int = Field(20, ge=1, description="Evaluations between two reflections.")
    model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    max_tokens: int = Field(
        300, gt=0,
        description="Reply budget of one reflection call, in tokens.",
    )
    max_recommendations: int = Field(
        4, ge=1, le=9,
        description="Recommendations a reflection may give.",
    )
    per_prompt: int = Field(
        1, ge=0,
        description="Recommendations sampled into each mutation prompt.",
    )
