"""Build providers from model configs. Remote providers are wrapped in the retry policy; local
models are loaded once per weights file and shared between configs that name the same file."""

from __future__ import annotations

import os
from pathlib import Path

from cambrian.config import LLMConfig, ModelConfig
from cambrian.llm.base import LLMAuthError, LLMProvider
from cambrian.llm.pricing import ModelPrices
from cambrian.llm.retry import RetryingProvider, RetryPolicy

DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
DEFAULT_LOCAL_CONTEXT = 8192


def _api_key(config: ModelConfig) -> str | None:
    env_name = config.api_key_env or DEFAULT_KEY_ENV.get(config.provider)
    key = os.environ.get(env_name) if env_name else None
    if key is None and config.provider in ("anthropic", "gemini") and config.base_url is None:
        raise LLMAuthError(
            f"model '{config.label}' needs an API key: set the environment variable {env_name}"
        )
    if key is None and config.provider == "openai" and config.base_url is None:
        raise LLMAuthError(
            f"model '{config.label}' talks to api.openai.com and needs {env_name}; for a local "
            "OpenAI-compatible server (vLLM, Ollama, llama.cpp server) set base_url"
        )
    return key


def _prices(config: ModelConfig) -> ModelPrices | None:
    if config.price_input_per_mtok is None and config.price_output_per_mtok is None:
        return None
    return ModelPrices(
        input_per_mtok=config.price_input_per_mtok or 0.0,
        output_per_mtok=config.price_output_per_mtok or 0.0,
    )


def _local_provider(config: ModelConfig, cache: dict[str, LLMProvider]) -> LLMProvider:
    from cambrian.llm.local_provider import LocalLlamaProvider
    from cambrian.llm.model_files import assemble

    path = Path(config.model)
    weights = path if path.suffix == ".gguf" and path.exists() else assemble(config.model)
    key = f"{weights}|{config.context_window}|{config.n_threads}"
    if key not in cache:
        cache[key] = LocalLlamaProvider(
            weights,
            n_ctx=config.context_window or DEFAULT_LOCAL_CONTEXT,
            n_threads=config.n_threads,
        )
    return cache[key]


def build_provider(config: ModelConfig, retries: RetryPolicy, cache: dict[str, LLMProvider]) -> LLMProvider:
    if config.provider == "local":
        return _local_provider(config, cache)
    common = dict(
        model=config.model,
        base_url=config.base_url,
        api_key=_api_key(config),
        timeout_s=config.timeout_s,
        context_window=config.context_window,
        prices=_prices(config),
    )
    if config.provider == "openai":
        from cambrian.llm.openai_compat import OpenAICompatibleProvider

        inner: LLMProvider = OpenAICompatibleProvider(**common)
    elif config.provider == "anthropic":
        from cambrian.llm.anthropic_provider import AnthropicProvider

        inner = AnthropicProvider(**common)
    else:
        from cambrian.llm.gemini_provider import GeminiProvider

        inner = GeminiProvider(**common)
    return RetryingProvider(inner, retries)


def build_providers(config: LLMConfig) -> dict[str, LLMProvider]:
    policy = RetryPolicy(
        max_attempts=config.retries.max_attempts,
        initial_backoff_s=config.retries.initial_backoff_s,
        max_backoff_s=config.retries.max_backoff_s,
    )
    cache: dict[str, LLMProvider] = {}
    return {m.label: build_provider(m, policy, cache) for m in config.models}
