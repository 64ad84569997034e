"""LLM providers by name (``llm.models[].provider``): how to build one from its model config,
whether it runs in this process, and which environment variable holds its API key by default.

The built-in ones are ``local`` (llama.cpp), ``openai`` (any OpenAI-compatible server),
``anthropic`` and ``gemini``; a plugin module registers another with
:func:`register_provider` (``docs/extending.md``; remote ones build on ``remote.py``).
"""

from __future__ import annotations

from cambrian.core.registry import Registry
from cambrian.llm.builtin_providers import BUILTIN_PROVIDERS
from cambrian.llm.provider_spec import ProviderSpec

__all__ = ["PROVIDERS", "ProviderSpec", "register_provider"]

PROVIDERS: Registry[ProviderSpec] = Registry(
    "LLM provider (llm.models[].provider)",
    hint=" A plugin module listed under search.plugins can register more.")


def register_provider(spec: ProviderSpec) -> ProviderSpec:
    return PROVIDERS.register(spec.name, spec)


for _builtin in BUILTIN_PROVIDERS:
    register_provider(_builtin)
