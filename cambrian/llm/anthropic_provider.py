"""Provider for Anthropic's Messages API (Claude models).

System messages travel in the separate ``system`` parameter; the conversation alternates user
and assistant turns. The SDK's own retries are disabled; :mod:`cambrian.llm.retry` owns that.
"""

from __future__ import annotations

import os
import re
from typing import Any

import anthropic

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
    Message,
    Usage,
)
from cambrian.llm.pricing import ModelPrices
from cambrian.llm.remote import RemoteProvider, preview
from cambrian.llm.retry import parse_retry_after

# Anthropic-compatible local gateways ignore the key, but the SDK wants one to build headers.
PLACEHOLDER_API_KEY = "not-needed"

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    # The reply was cut because prompt + reply filled the context window.
    "model_context_window_exceeded": "length",
}

# Claude Opus 4.7 and generation-5 models reject sampling parameters ("temperature is
# deprecated for this model"); earlier models accept them.
_LEGACY_NAME = re.compile(r"claude-\d")  # claude-3-5-sonnet, claude-2.1, ...
_FAMILY_VERSION = re.compile(r"claude-[a-z]+-(\d+)(?:-(\d{1,2})(?!\d))?")

_CONTEXT_OVERFLOW_TEXT = re.compile(
    r"prompt is too long|context window|context length|too many tokens", re.IGNORECASE
)


class AnthropicProvider(RemoteProvider):
    """Claude over the Messages API; ``prices`` overrides the built-in price table.

    ``sampling_params`` says whether to send temperature/top_p (default: inferred from the
    model name, since newer Claude models reject them).
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        context_window: int | None = None,
        prices: ModelPrices | None = None,
        sampling_params: bool | None = None,
    ) -> None:
        super().__init__(model, base_url, api_key, timeout_s, context_window, prices)
        self._sampling_params = (
            sampling_params if sampling_params is not None else _accepts_sampling_params(model)
        )
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if api_key is None and base_url is not None:
            api_key = PLACEHOLDER_API_KEY
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
        )

    default_host = "api.anthropic.com"

    async def _send(self, request: LLMRequest) -> Any:
        return await self._client.messages.create(**self._request_body(request))

    def _read(self, raw: Any) -> tuple[str, FinishReason, Usage]:
        text, finish_reason = self._read_message(raw)
        return text, finish_reason, _read_usage(getattr(raw, "usage", None))

    def _sdk_error(self, error: Exception) -> LLMError | None:
        if isinstance(error, anthropic.AnthropicError):
            return self._map_error(error)
        # The SDK raises a bare TypeError when it finds no credentials at all.
        if isinstance(error, TypeError) and "authentication method" in str(error):
            return LLMAuthError(f"{self.label()}: {error}")
        return None

    async def aclose(self) -> None:
        await self._client.close()

    def _request_body(self, request: LLMRequest) -> dict[str, Any]:
        params = request.params
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self._model,
            "messages": _alternating_turns(request.messages),
            "max_tokens": params.max_tokens,
        }
        if system:
            body["system"] = system
        if self._sampling_params:
            # The SDK no longer has keyword arguments for these, the wire protocol still does.
            sampling: dict[str, float] = {"temperature": params.temperature}
            if params.top_p is not None:
                sampling["top_p"] = params.top_p
            body["extra_body"] = sampling
        if params.stop:
            body["stop_sequences"] = list(params.stop)
        # The Messages API has no seed parameter; Claude sampling is not reproducible.
        return body

    def _read_message(self, message: Any) -> tuple[str, FinishReason]:
        blocks = getattr(message, "content", None)
        if not isinstance(blocks, list):
            raise LLMMalformedReply(
                f"{self.label()} returned a response without content blocks "
                f"(malformed body: {preview(message)})"
            )
        # Thinking, redacted-thinking and tool blocks are not part of the answer.
        text = "".join(
            str(getattr(block, "text", "") or "")
            for block in blocks
            if getattr(block, "type", None) == "text"
        )
        stop_reason = str(getattr(message, "stop_reason", None))
        return text, _STOP_REASONS.get(stop_reason, "other")

    def _map_error(self, error: anthropic.AnthropicError) -> LLMError:
        label = self.label()
        if isinstance(error, anthropic.APITimeoutError):
            return LLMTimeout(f"{label} timed out")
        if isinstance(error, anthropic.APIConnectionError):
            return LLMUnreachable(f"{label} unreachable: {error.__cause__ or error}")
        if isinstance(error, anthropic.APIResponseValidationError):
            return LLMMalformedReply(f"{label} returned a malformed body: {error}")
        if isinstance(error, anthropic.CredentialsError):
            return LLMAuthError(f"{label}: {error}")
        if not isinstance(error, anthropic.APIStatusError):
            return LLMBadRequest(f"{label}: {type(error).__name__}: {error}")
        status = error.status_code
        message = _error_message(error)
        detail = f"{label} HTTP {status}: {message}"
        if status == 429:
            return LLMRateLimited(detail, retry_after_s=parse_retry_after(error.response.headers))
        if status in (401, 403):
            return LLMAuthError(detail)
        if status == 408:
            return LLMTimeout(detail)
        if status >= 500:  # includes 529 overloaded_error
            return LLMUnavailable(detail)
        if status == 413 or _CONTEXT_OVERFLOW_TEXT.search(message):
            return ContextOverflow(detail)
        return LLMBadRequest(detail)

def _accepts_sampling_params(model: str) -> bool:
    name = model.lower()
    if "claude" not in name or _LEGACY_NAME.search(name):
        return True  # old Claude naming, or a gateway's own model name: the classic API
    match = _FAMILY_VERSION.search(name)
    if match is None:
        return False  # an unversioned new-style name such as a preview model
    major, minor = int(match.group(1)), int(match.group(2) or 0)
    return major < 4 or (major == 4 and minor < 7)


def _alternating_turns(messages: tuple[Message, ...]) -> list[dict[str, str]]:
    """User/assistant turns, merging consecutive turns of one role so roles strictly alternate."""
    turns: list[dict[str, str]] = []
    for message in messages:
        if message.role == "system":
            continue
        if turns and turns[-1]["role"] == message.role:
            turns[-1]["content"] += "\n\n" + message.content
        else:
            turns.append({"role": message.role, "content": message.content})
    return turns


def _read_usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    uncached = int(getattr(usage, "input_tokens", 0) or 0)
    cache_read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
    cache_write = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    # Anthropic's input_tokens excludes cached tokens; Usage.prompt_tokens counts the whole prompt.
    return Usage(
        prompt_tokens=uncached + cache_read + cache_write,
        completion_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        cached_prompt_tokens=cache_read,
    )


def _error_message(error: anthropic.APIStatusError) -> str:
    api_message = getattr(error, "api_message", None)
    if isinstance(api_message, str) and api_message:
        return api_message
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    if isinstance(body, str) and body:
        return body[:500]
    return error.message
