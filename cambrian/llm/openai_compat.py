"""Provider for any server speaking the OpenAI Chat Completions API.

That covers OpenAI itself, DeepSeek, and local servers such as vLLM, Ollama and the llama.cpp
server. The SDK's own retries are disabled; :mod:`cambrian.llm.retry` owns that policy.
"""

from __future__ import annotations

import ipaddress
import os
import re
from typing import Any
from urllib.parse import urlparse

import openai

from cambrian.llm.base import (
    ContextOverflow,
    FinishReason,
    LLMAuthError,
    LLMBadRequest,
    LLMError,
    LLMMalformedReply,
    LLMRateLimited,
    LLMRequest,
    LLMTimeout,
    LLMUnavailable,
    LLMUnreachable,
    Usage,
)
from cambrian.llm.pricing import FREE, ModelPrices, lookup_prices
from cambrian.llm.remote import RemoteProvider, preview
from cambrian.llm.retry import parse_retry_after

# Local servers ignore the key, but the SDK refuses to build a client without one.
PLACEHOLDER_API_KEY = "not-needed"

_REASONING_MODEL_PREFIXES = ("o1", "o3", "o4", "gpt-5")

_CONTEXT_OVERFLOW_CODES = {"context_length_exceeded", "exceed_context_size_error"}
_CONTEXT_OVERFLOW_TEXT = re.compile(
    r"context length|context window|maximum context|context size|prompt is too long"
    r"|reduce the length of the (messages|prompt)",
    re.IGNORECASE,
)

_FINISH_REASONS: dict[str, FinishReason] = {"stop": "stop", "length": "length"}


class OpenAICompatibleProvider(RemoteProvider):
    """Chat Completions over HTTP.

    ``prices`` overrides the built-in price table; a model missing from the table served from a
    loopback address is treated as free (a local model), elsewhere its cost is unknown.
    ``reasoning_model`` (default: inferred from the name, e.g. o4-mini, gpt-5) switches to
    ``max_completion_tokens`` and drops the sampling knobs those models reject.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        context_window: int | None = None,
        prices: ModelPrices | None = None,
        extra_body: dict[str, Any] | None = None,
        reasoning_model: bool | None = None,
    ) -> None:
        super().__init__(model, base_url, api_key, timeout_s, context_window, prices)
        self._extra_body = dict(extra_body or {})
        self._reasoning_model = (
            reasoning_model
            if reasoning_model is not None
            else base_url is None and model.lower().startswith(_REASONING_MODEL_PREFIXES)
        )
        if api_key is None and base_url is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or PLACEHOLDER_API_KEY,
            timeout=timeout_s,
            max_retries=0,
        )

    default_host = "api.openai.com"

    def _resolve_prices(self, prices: ModelPrices | None) -> ModelPrices | None:
        found = lookup_prices(self._model, prices)
        if found is None and self._base_url is not None and _is_loopback(self._base_url):
            return FREE  # a local server: free unless prices were given
        return found

    async def _send(self, request: LLMRequest) -> Any:
        return await self._client.chat.completions.create(**self._request_body(request))

    def _read(self, raw: Any) -> tuple[str, FinishReason, Usage]:
        text, finish_reason = self._read_choice(raw)
        return text, finish_reason, _read_usage(getattr(raw, "usage", None))

    def _sdk_error(self, error: Exception) -> LLMError | None:
        return self._map_error(error) if isinstance(error, openai.OpenAIError) else None

    async def aclose(self) -> None:
        await self._client.close()

    def _request_body(self, request: LLMRequest) -> dict[str, Any]:
        params = request.params
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        if self._reasoning_model:
            body["max_completion_tokens"] = params.max_tokens
        else:
            body["max_tokens"] = params.max_tokens
            body["temperature"] = params.temperature
            if params.top_p is not None:
                body["top_p"] = params.top_p
            if params.stop:
                body["stop"] = list(params.stop)
        if params.seed is not None:
            body["seed"] = params.seed
        if self._extra_body:
            body["extra_body"] = self._extra_body
        return body

    def _read_choice(self, completion: Any) -> tuple[str, FinishReason]:
        try:
            choice = completion.choices[0]
            content = choice.message.content
            raw_finish = choice.finish_reason
        except (AttributeError, IndexError, KeyError, TypeError) as error:
            raise LLMMalformedReply(
                f"{self.label()} returned a response without choices "
                f"(malformed or empty body: {preview(completion)})"
            ) from error
        if content is not None and not isinstance(content, str):
            raise LLMMalformedReply(f"{self.label()} returned non-text message content")
        finish_reason = _FINISH_REASONS.get(str(raw_finish), "other")
        return content or "", finish_reason

    def _map_error(self, error: openai.OpenAIError) -> LLMError:
        label = self.label()
        if isinstance(error, openai.APITimeoutError):
            return LLMTimeout(f"{label} timed out")
        if isinstance(error, openai.APIConnectionError):
            return LLMUnreachable(f"{label} unreachable: {error.__cause__ or error}")
        if isinstance(error, openai.APIResponseValidationError):
            return LLMMalformedReply(f"{label} returned a malformed body: {error}")
        if not isinstance(error, openai.APIStatusError):
            return LLMBadRequest(f"{label}: {type(error).__name__}: {error}")
        status = error.status_code
        detail = f"{label} HTTP {status}: {_error_message(error)}"
        if status == 429:
            if error.code == "insufficient_quota":
                return LLMBadRequest(detail)  # a billing problem, not a transient limit
            return LLMRateLimited(detail, retry_after_s=parse_retry_after(error.response.headers))
        if status in (401, 403):
            return LLMAuthError(detail)
        if status == 408:
            return LLMTimeout(detail)
        if status >= 500:
            return LLMUnavailable(detail)
        if _is_context_overflow(error):
            return ContextOverflow(detail)
        return LLMBadRequest(detail)

def _read_usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached is None:
        # DeepSeek reports its prompt cache hits in its own field.
        cached = getattr(usage, "prompt_cache_hit_tokens", None)
    return Usage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cached_prompt_tokens=int(cached or 0),
    )


def _error_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    if isinstance(body, str) and body:
        return body[:500]
    return error.message


def _is_context_overflow(error: openai.APIStatusError) -> bool:
    body = error.body if isinstance(error.body, dict) else {}
    markers = {str(error.code or ""), str(body.get("type") or "")}
    if markers & _CONTEXT_OVERFLOW_CODES:
        return True
    return bool(_CONTEXT_OVERFLOW_TEXT.search(_error_message(error)))


def _is_loopback(base_url: str) -> bool:
    host = urlparse(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
