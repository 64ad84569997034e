"""The providers Cambrian ships: the embedded local model, three remote APIs, and ``replay``
(the replies a recorded run got, served to the same requests; ``replay_provider.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cambrian.config import ModelConfig
from cambrian.llm.base import LLMProvider
from cambrian.llm.pricing import ModelPrices
from cambrian.llm.provider_spec import ProviderSpec

DEFAULT_LOCAL_CONTEXT = 8192


def model_prices(config: ModelConfig) -> ModelPrices | None:
    """The prices a model config gives (None: the built-in table decides)."""
    if config.price_input_per_mtok is None and config.price_output_per_mtok is None:
        return None
    return ModelPrices(input_per_mtok=config.price_input_per_mtok or 0.0,
                       output_per_mtok=config.price_output_per_mtok or 0.0)


def remote_options(config: ModelConfig, api_key: str | None) -> dict[str, Any]:
    """The constructor arguments every remote provider (``remote.py``) takes."""
    return dict(model=config.model, base_url=config.base_url, api_key=api_key,
                timeout_s=config.timeout_s, context_window=config.context_window,
                prices=model_prices(config))


def _local(config: ModelConfig, api_key: str | None, shared: dict[str, Any]) -> LLMProvider:
    """One llama.cpp model per weights file, shared by the configs of a run that name it."""
    from cambrian.llm.local_provider import LocalLlamaProvider
    from cambrian.llm.model_files import assemble

    path = Path(config.model)
    weights = path if path.suffix == ".gguf" and path.exists() else assemble(config.model)
    key = f"local|{weights}|{config.context_window}|{config.n_threads}"
    if key not in shared:
        shared[key] = LocalLlamaProvider(weights,
                                         n_ctx=config.context_window or DEFAULT_LOCAL_CONTEXT,
                                         n_threads=config.n_threads)
    return shared[key]


def _openai(config: ModelConfig, api_key: str | None, shared: dict[str, Any]) -> LLMProvider:
    from cambrian.llm.openai_compat import OpenAICompatibleProvider

    return OpenAICompatibleProvider(**remote_options(config, api_key))


def _anthropic(config: ModelConfig, api_key: str | None, shared: dict[str, Any]) -> LLMProvider:
    from cambrian.llm.anthropic_provider import AnthropicProvider

    return AnthropicProvider(**remote_options(config, api_key))


def _gemini(config: ModelConfig, api_key: str | None, shared: dict[str, Any]) -> LLMProvider:
    from cambrian.llm.gemini_provider import GeminiProvider

    return GeminiProvider(**remote_options(config, api_key))


def _replay(config: ModelConfig, api_key: str | None, shared: dict[str, Any]) -> LLMProvider:
    """``model`` names a run folder: its recorded replies answer the requests it sent."""
    from cambrian.llm.replay_provider import replay_provider_from_run

    return replay_provider_from_run(config.model, model_name=config.model,
                                    context_window=config.context_window, shared=shared)


BUILTIN_PROVIDERS = (
    ProviderSpec("local", _local, local=True),
    ProviderSpec("openai", _openai, key_env="OPENAI_API_KEY", key_required=True),
    ProviderSpec("anthropic", _anthropic, key_env="ANTHROPIC_API_KEY", key_required=True),
    ProviderSpec("gemini", _gemini, key_env="GEMINI_API_KEY", key_required=True),
    ProviderSpec("replay", _replay),
)
