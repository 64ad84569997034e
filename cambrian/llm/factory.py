"""Build a run's providers from its model configs (``providers.py`` knows each kind). Remote
providers are wrapped in the retry policy; local ones are not (nothing transient to retry)."""

from __future__ import annotations

import logging
import os
from typing import Any

from cambrian.config import LLMConfig, ModelConfig
from cambrian.llm.base import LLMAuthError, LLMProvider
from cambrian.llm.providers import PROVIDERS, ProviderSpec
from cambrian.llm.retry import RetryingProvider, RetryPolicy

log = logging.getLogger(__name__)
_warned_keyless: set[tuple[str, str]] = set()


def key_env_name(config: ModelConfig) -> str | None:
    """The environment variable holding the model's API key."""
    return config.api_key_env or PROVIDERS.get(config.provider).key_env


def configured_secrets(config: LLMConfig) -> tuple[str, ...]:
    """The values of every configured API key variable: what must never reach a candidate,
    a prompt or the store."""
    values = []
    for model in config.models:
        name = key_env_name(model)
        value = os.environ.get(name) if name else None
        if value:
            values.append(value)
    return tuple(values)


def _api_key(config: ModelConfig, spec: ProviderSpec) -> str | None:
    env_name = key_env_name(config)
    key = (os.environ.get(env_name) or None) if env_name else None  # an empty value is none
    if key is None and config.api_key_env and config.base_url is not None:
        _warn_keyless(config, config.api_key_env)
    if key is None and spec.key_required and config.base_url is None:
        if spec.name == "openai":
            raise LLMAuthError(
                f"model '{config.label}' talks to api.openai.com and needs {env_name}; for a "
                "local OpenAI-compatible server (vLLM, Ollama, llama.cpp server) set base_url")
        raise LLMAuthError(
            f"model '{config.label}' needs an API key: set the environment variable {env_name}")
    return key


def _warn_keyless(config: ModelConfig, env_name: str) -> None:
    """A variable the config names for the key is unset: the server gets no key. Said once per
    model and variable (a server that needs one then answers 401: the run stops, exit 5)."""
    if (config.label, env_name) in _warned_keyless:
        return
    _warned_keyless.add((config.label, env_name))
    log.warning("warning: model '%s' has no API key: api_key_env names %s, which is not set "
                "(or empty), so its calls to %s carry none", config.label, env_name,
                config.base_url)


def build_provider(config: ModelConfig, retries: RetryPolicy,
                   shared: dict[str, Any]) -> LLMProvider:
    spec = PROVIDERS.get(config.provider)
    provider = spec.build(config, None if spec.local else _api_key(config, spec), shared)
    return provider if spec.local else RetryingProvider(provider, retries)


def build_providers(config: LLMConfig) -> dict[str, LLMProvider]:
    policy = RetryPolicy(
        max_attempts=config.retries.max_attempts,
        initial_backoff_s=config.retries.initial_backoff_s,
        max_backoff_s=config.retries.max_backoff_s,
    )
    shared: dict[str, Any] = {}
    return {m.label: build_provider(m, policy, shared) for m in config.models}
