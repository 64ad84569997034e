"""Which LLM a trace analysis talks to (judge, knob finder, replay), from command-line options.

Layers, later ones winning: Cambrian's model defaults (the local llama.cpp model), a YAML file
holding one model entry (the fields of ``llm.models[*]`` in a run config), ``--provider`` /
``--model`` / ``--base-url``, and ``--set key=value`` pairs (values are read as YAML scalars, so
``--set context_window=8192`` gives a number).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from cambrian.config import ModelConfig
from cambrian.llm.base import LLMProvider
from cambrian.llm.factory import build_provider
from cambrian.llm.gateway import standalone_model
from cambrian.llm.retry import RetryPolicy


class ModelChoiceError(ValueError):
    pass


def model_config_from_options(*, model_file: Path | None = None, provider: str | None = None,
                              model: str | None = None, base_url: str | None = None,
                              settings: list[str] | None = None) -> ModelConfig:
    data: dict[str, Any] = {}
    if model_file is not None:
        try:
            loaded = yaml.safe_load(Path(model_file).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ModelChoiceError(f"cannot read model file {model_file}: {exc}") from None
        if not isinstance(loaded, dict):
            raise ModelChoiceError(f"{model_file} must hold one mapping of model fields")
        data.update(loaded)
    for key, value in (("provider", provider), ("model", model), ("base_url", base_url)):
        if value is not None:
            data[key] = value
    for item in settings or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ModelChoiceError(f"--set expects key=value, got {item!r}")
        data[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
    try:
        return ModelConfig(**data)
    except ValidationError as exc:
        raise ModelChoiceError(f"invalid model settings: {exc}") from None


def judge_id(config: ModelConfig) -> str:
    """The cache identity of a model: provider and model name (not the display label)."""
    return f"{config.provider}:{config.model}"


def provider_for(config: ModelConfig, purpose: str = "analysis") -> LLMProvider:
    """The model behind the LLM gateway (its checks and reply cap), with Cambrian's usual
    retry policy for transient remote failures."""
    return standalone_model(config, build_provider(config, RetryPolicy(), {}), purpose)
