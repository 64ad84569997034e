"""The `prompt_evolution:` section of the run config: co-evolved system prompts."""

from __future__ import annotations

from pydantic import Field

from cambrian.config.strict import StrictModel


class PromptEvolutionConfig(StrictModel):
    """Co-evolved system prompts (seed 002 §10.8): an archive of role prompts scored by the
    improvements of the programs they produced, sampled with UCB1, now and then rewritten by an
    LLM. Off by default: every new system prompt costs a small local model a full re-read of
    the prompt prefix it could otherwise reuse from its KV cache."""

    enabled: bool = Field(
        False,
        description="Co-evolve the system prompts (an archive of role prompts scored by their "
                    "programs' improvements).",
    )
    exploration: float = Field(
        1.0, ge=0,
        description="UCB1 exploration coefficient of the prompt archive.",
    )
    mutate_every: int = Field(
        10, ge=1,
        description="Evaluations between LLM rewrites of the best prompt.",
    )
    max_prompts: int = Field(
        6, ge=2,
        description="Active archive size; the weakest tried prompt retires.",
    )
    min_pulls_to_retire: int = Field(
        3, ge=1,
        description="Uses a prompt gets before it may be retired.",
    )
    model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    max_tokens: int = Field(300, gt=0, description="Reply budget of one prompt rewrite, in tokens.")
