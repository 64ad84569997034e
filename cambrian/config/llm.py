"""The `llm:` section of the run config: the models of the ensemble, how an arm is drawn and
how a failed call is retried (``cambrian/llm/``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from cambrian.config.strict import StrictModel

# "auto", or the name of a registered reply format (cambrian/mutate/formats/: diff, full,
# function, or one a plugin registers); checked when the run is built.
PatchFormat = str


class ModelConfig(StrictModel):
    """One model of the ensemble. Each (model, temperature) pair is one arm."""

    name: str | None = Field(None, description="Label of the model in the ledger, status and "
                                               "other settings' model references; default: "
                                               "model.")
    provider: str = Field(
        "local",
        description="Who serves the model: local, openai, anthropic, gemini, replay, or a "
                    "provider a plugin registers (cambrian/llm/providers.py); checked when "
                    "the run is built.",
    )
    model: str = Field(
        "qwen2.5-coder-1.5b-instruct",
        description="The provider's model name (for local: a registered embedded model).",
    )
    base_url: str | None = Field(
        None,
        description="Address of an OpenAI-compatible (or other provider's) server; None: the "
                    "provider's default.",
    )
    api_key_env: str | None = Field(
        None,
        description="Name of the environment variable holding the API key (its value is never "
                    "stored or shown to a candidate).",
    )
    temperatures: list[float] = Field(
        default_factory=list,
        description="Sampling temperatures, each one arm; empty: [0.0, 0.5, 1.0] for remote "
                    "models and [0.4, 0.7, 1.0] for local ones (a small model at temperature "
                    "0 repeats the same reply for a repeated parent).",
    )
    weight: float = Field(
        1.0, gt=0,
        description="Relative weight of this model's arms in the ensemble (selection: fixed "
                    "uses it as drawn share).",
    )
    max_tokens: int | None = Field(
        None, gt=0,
        description="Reply budget of one call, in tokens; None: per patch type "
                    "(prompt.reply_tokens_*).",
    )
    context_window: int | None = Field(
        None, gt=0,
        description="The model's context window in tokens; None: the provider's known value.",
    )
    timeout_s: float = Field(
        600.0, gt=0,
        description="Seconds one call may take before it fails (and is retried).",
    )
    price_input_per_mtok: float | None = Field(
        None, ge=0,
        description="Price in USD per million prompt tokens; None: the vendor's list price "
                    "(genai-prices).",
    )
    price_output_per_mtok: float | None = Field(
        None, ge=0,
        description="Price in USD per million completion tokens; None: the vendor's list "
                    "price (genai-prices).",
    )
    patch_format: PatchFormat = Field(
        "auto",
        description="Reply format: auto, or a registered format (diff, full, function, or a "
                    "plugin's).",
    )
    n_threads: int | None = Field(None, gt=0, description="CPU threads llama.cpp uses for a "
                                                          "local model; None: its default.")
    replicas: int = Field(
        1, ge=1,
        description="Local only, with execution.backend: ray: copies of the model, each in a "
                    "Ray actor on its own worker "
                    "(cambrian/evaluate/distributed/llm_replicas.py), so that up to this many "
                    "calls run at once; set evolution.max_proposals_in_flight to at least "
                    "this. 1: in this process.",
    )

    @property
    def label(self) -> str:
        return self.name or self.model

    @field_validator("replicas")
    @classmethod
    def _local_replicas(cls, value: int, info: ValidationInfo) -> int:
        provider = info.data.get("provider", "local")
        if value > 1 and provider != "local":
            raise ValueError(f"replicas > 1 serves a local model from Ray workers; provider "
                             f"'{provider}' is not local (its server scales on its own)")
        return value

    @model_validator(mode="after")
    def _check(self) -> ModelConfig:
        if not self.temperatures:
            defaults = [0.4, 0.7, 1.0] if self.provider == "local" else [0.0, 0.5, 1.0]
            object.__setattr__(self, "temperatures", defaults)
        if any(t < 0 or t > 2 for t in self.temperatures):
            raise ValueError("temperatures must lie in [0, 2]")
        return self


class RetryConfig(StrictModel):
    max_attempts: int = Field(
        4, ge=1,
        description="Attempts of one call (the first included) before it fails.",
    )
    initial_backoff_s: float = Field(
        1.0, ge=0,
        description="Wait before the first retry, doubled after each failed attempt.",
    )
    max_backoff_s: float = Field(30.0, ge=0, description="The longest wait between two "
                                                         "attempts, in seconds.")


class LLMConfig(StrictModel):
    models: list[ModelConfig] = Field(
        default_factory=lambda: [ModelConfig()],
        description="The models of the ensemble; each (model, temperature) pair is one arm of "
                    "the bandit.",
    )
    selection: Literal["ucb1", "fixed", "single"] = Field(
        "ucb1",
        description="How an arm is drawn: ucb1 (bandit over the arms' improvements), fixed "
                    "(by weight), single (the first model only).",
    )
    exploration: float = Field(
        1.0, ge=0,
        description="UCB1 exploration coefficient (seed 000 Appendix B).",
    )
    retries: RetryConfig = Field(
        default_factory=RetryConfig,
        description="Retries of a failed call (timeouts, HTTP 429/5xx, malformed replies).",
    )
    max_reply_chars: int = Field(
        200_000, ge=1_000,
        description="Characters of a reply kept; a longer reply is cut there (and the cut "
                    "recorded).",
    )

    @model_validator(mode="after")
    def _unique_labels(self) -> LLMConfig:
        labels = [m.label for m in self.models]
        duplicates = {x for x in labels if labels.count(x) > 1}
        if duplicates:
            raise ValueError(f"model labels must be unique; repeated: {sorted(duplicates)}")
        if not self.models:
            raise ValueError("llm.models must list at least one model")
        return self
