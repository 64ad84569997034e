"""Provider for any server speaking the OpenAI Chat Completions API.

That covers OpenAI itself, DeepSeek, and local servers such as vLLM, Ollama and the llama.cpp
server. The request is one JSON POST to ``{base_url}/chat/completions`` over httpx, as the
OpenAI SDK sends it (bearer key, ``OPENAI_BASE_URL``, ``OPENAI_ORG_ID`` and
``OPENAI_PROJECT_ID`` honoured, ``extra_body`` merged into the body); the SDK itself is not
used: importing it costs about half a second of CPU and each call several milliseconds of typed
transforms, for a body this module builds already. No retries here: :mod:`cambrian.llm.retry`
owns that policy.
"""

from __future__ import annotations

import ipaddress
import os
import re
from typing import Any
from urllib.parse import urlparse

import httpx

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
from cambrian.llm.remote import RemoteProvider, preview, tls_context
from cambrian.llm.retry import parse_retry_after

# Local servers ignore the key; one is sent anyway, as the SDK insists on one.
PLACEHOLDER_API_KEY = "not-needed"
OPENAI_API_BASE = "https://api.openai.com/v1"

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
        headers = {"Authorization": f"Bearer {api_key or PLACEHOLDER_API_KEY}"}
        for header, variable in (("OpenAI-Organization", "OPENAI_ORG_ID"),
                                 ("OpenAI-Project", "OPENAI_PROJECT_ID")):
            if os.environ.get(variable):
                headers[header] = os.environ[variable]
        root = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_API_BASE
        self._client = httpx.AsyncClient(base_url=root, headers=headers,
                                         timeout=httpx.Timeout(timeout_s), verify=tls_context())

    default_host = "api.openai.com"

    def _resolve_prices(self, prices: ModelPrices | None) -> ModelPrices | None:
        found = lookup_prices(self._model, prices)
        if found is None and self._base_url is not None and _is_loopback(self._base_url):
            return FREE  # a local server: free unless prices were given
        return found

    async def _send(self, request: LLMRequest) -> Any:
        """The reply's JSON (its text when it is not JSON); an HTTP error status raises."""
        response = await self._client.post("chat/completions", json=self._request_body(request))
        if response.status_code >= 400:
            raise StatusError(response)
        try:
            return response.json()
        except ValueError:
            return response.text

    def _read(self, raw: Any) -> tuple[str, FinishReason, Usage]:
        text, finish_reason = self._read_choice(raw)
        return text, finish_reason, _read_usage(raw.get("usage"))

    def _sdk_error(self, error: Exception) -> LLMError | None:
        return self._map_error(error) if isinstance(error, (StatusError, httpx.HTTPError)) \
            else None

    async def aclose(self) -> None:
        await self._client.aclose()

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
        body.update(self._extra_body)  # as the SDK merges its extra_body
        return body

    def _read_choice(self, completion: Any) -> tuple[str, FinishReason]:
        try:
            choice = completion["choices"][0]
            content = choice["message"].get("content")
            raw_finish = choice.get("finish_reason")
        except (AttributeError, IndexError, KeyError, TypeError) as error:
            raise LLMMalformedReply(
                f"{self.label()} returned a response without choices "
                f"(malformed or empty body: {preview(completion)})"
            ) from error
        if content is not None and not isinstance(content, str):
            raise LLMMalformedReply(f"{self.label()} returned non-text message content")
        finish_reason = _FINISH_REASONS.get(str(raw_finish), "other")
        return content or "", finish_reason

    def _map_error(self, error: StatusError | httpx.HTTPError) -> LLMError:
        label = self.label()
        if isinstance(error, httpx.TimeoutException):
            return LLMTimeout(f"{label} timed out")
        if isinstance(error, httpx.TransportError):
            return LLMUnreachable(f"{label} unreachable: {error.__cause__ or error}")
        if not isinstance(error, StatusError):
            return LLMBadRequest(f"{label}: {type(error).__name__}: {error}")
        status = error.status_code
        detail = f"{label} HTTP {status}: {_error_message(error)}"
        if status == 429:
            if error.code == "insufficient_quota":
                return LLMBadRequest(detail)  # a billing problem, not a transient limit
            return LLMRateLimited(detail, retry_after_s=parse_retry_after(error.headers))
        if status in (401, 403):
            return LLMAuthError(detail)
        if status == 408:
            return LLMTimeout(detail)
        if status >= 500:
            return LLMUnavailable(detail)
        if _is_context_overflow(error):
            return ContextOverflow(detail)
        return LLMBadRequest(detail)

class StatusError(Exception):
    """An HTTP error status, with what the SDK's ``APIStatusError`` carried: the error object
    of an OpenAI-style body (``{"error": {...}}``, else the whole body), its code, a message."""

    def __init__(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        self.headers = response.headers
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text
        if isinstance(body, dict) and "error" in body:
            body = body["error"]
        self.body = body
        self.code = body.get("code") if isinstance(body, dict) else None
        self.message = f"Error code: {self.status_code} - {body!r}"[:500]
        super().__init__(self.message)


def _read_usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None:
        # DeepSeek reports its prompt cache hits in its own field.
        cached = usage.get("prompt_cache_hit_tokens")
    return Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_prompt_tokens=int(cached or 0),
    )


def _error_message(error: StatusError) -> str:
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    if isinstance(body, str) and body:
        return body[:500]
    return error.message


def _is_context_overflow(error: StatusError) -> bool:
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
