"""What Cambrian needs to know of an LLM provider: how to build one from its model config,
whether it runs in this process, and which environment variable holds its API key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cambrian.config import ModelConfig
    from cambrian.llm.base import LLMProvider


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    # (model config, API key or None, a dict shared by the providers of one run: e.g. one
    # local model per weights file) -> a provider; raises LLMError when it cannot be built.
    build: Callable[[ModelConfig, str | None, dict[str, Any]], LLMProvider]
    local: bool = False  # runs in this process: slow serialised calls, grammars honoured
    key_env: str | None = None  # where the API key is read when api_key_env is not set
    # The vendor's own API needs a key (a base_url pointing elsewhere may not).
    key_required: bool = False
