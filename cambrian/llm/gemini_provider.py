"""Provider for Google's Gemini API (generateContent) through the google-genai SDK.

System messages become the ``system_instruction``; the conversation uses roles user/model. The
SDK is configured with a single attempt; :mod:`cambrian.llm.retry` owns the retry policy.
"""

from __future__ import annotations

import importlib
import os
import re
from typing import Any

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

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
from cambrian.llm.pricing import ModelPrices
from cambrian.llm.remote import RemoteProvider
from cambrian.llm.retry import parse_retry_after

# Test servers and proxies ignore the key, but the SDK refuses to build a client without one.
PLACEHOLDER_API_KEY = "not-needed"

_CONTEXT_OVERFLOW_TEXT = re.compile(
    r"input token count|exceeds the maximum number of tokens|context window|too long",
    re.IGNORECASE,
)
# Gemini answers a bad API key with 400 INVALID_ARGUMENT rather than 401.
_BAD_KEY_TEXT = re.compile(r"api key not valid|api_key_invalid", re.IGNORECASE)


def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeout errors, other transport errors) of whichever httpx flavour the SDK uses."""
    timeouts: list[type[BaseException]] = []
    transport: list[type[BaseException]] = []
    for module_name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


_TIMEOUT_ERRORS, _TRANSPORT_ERRORS = _transport_errors()


class GeminiProvider(RemoteProvider):
    """Gemini over generateContent; ``prices`` overrides the built-in price table.

    ``api_version`` ("v1", "v1beta") pins the REST version; None keeps the SDK's default.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        context_window: int | None = None,
        prices: ModelPrices | None = None,
        api_version: str | None = None,
    ) -> None:
        super().__init__(model, base_url, api_key, timeout_s, context_window, prices)
        api_key = (
            api_key
            or os.environ.get("GEMINI_API_KEY")
            or os.environ.get("GOOGLE_API_KEY")
            or PLACEHOLDER_API_KEY
        )
        http_options = types.HttpOptions(
            base_url=base_url,
            api_version=api_version,
            timeout=max(1, round(timeout_s * 1000)),  # the SDK counts milliseconds
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self._client = genai.Client(vertexai=False, api_key=api_key, http_options=http_options)

    default_host = "generativelanguage.googleapis.com"

    async def _send(self, request: LLMRequest) -> Any:
        contents, config = self._request_parts(request)
        return await self._client.aio.models.generate_content(
            model=self._model, contents=contents, config=config)

    def _read(self, raw: Any) -> tuple[str, FinishReason, Usage]:
        text, finish_reason = self._read_candidate(raw)
        return text, finish_reason, _read_usage(getattr(raw, "usage_metadata", None))

    def _sdk_error(self, error: Exception) -> LLMError | None:
        if isinstance(error, genai_errors.APIError):
            return self._map_api_error(error)
        if isinstance(error, _TIMEOUT_ERRORS):
            return LLMTimeout(f"{self.label()} timed out")
        if isinstance(error, _TRANSPORT_ERRORS):
            return LLMUnreachable(f"{self.label()} unreachable: {error!r}")
        return None  # a body that is not JSON, or not the protocol's: malformed

    async def aclose(self) -> None:
        await self._client.aio.aclose()
        self._client.close()

    def _request_parts(
        self, request: LLMRequest
    ) -> tuple[list[types.Content], types.GenerateContentConfig]:
        params = request.params
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        contents = [
            types.Content(
                role="model" if m.role == "assistant" else "user",
                parts=[types.Part(text=m.content)],
            )
            for m in request.messages
            if m.role != "system"
        ]
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=params.temperature,
            top_p=params.top_p,
            max_output_tokens=params.max_tokens,
            stop_sequences=list(params.stop) or None,
            seed=params.seed,
        )
        return contents, config

    def _read_candidate(self, response: Any) -> tuple[str, FinishReason]:
        candidates = getattr(response, "candidates", None)
        if not candidates:
            feedback = getattr(response, "prompt_feedback", None)
            block_reason = getattr(feedback, "block_reason", None)
            if block_reason is not None:
                raise LLMBadRequest(
                    f"{self.label()} blocked the prompt: {_enum_name(block_reason)}"
                )
            raise LLMMalformedReply(
                f"{self.label()} returned a response without candidates (malformed or empty body)"
            )
        candidate = candidates[0]
        content = getattr(candidate, "content", None)
        parts = getattr(content, "parts", None) or []
        # Thought summaries are not part of the answer.
        text = "".join(
            part.text for part in parts if getattr(part, "text", None) and not part.thought
        )
        finish = _enum_name(getattr(candidate, "finish_reason", None))
        finish_reason: FinishReason = (
            "stop" if finish == "STOP" else "length" if finish == "MAX_TOKENS" else "other"
        )
        return text, finish_reason

    def _map_api_error(self, error: genai_errors.APIError) -> LLMError:
        code = int(error.code or 0)
        message = str(error.message or error)
        detail = f"{self.label()} HTTP {code} {error.status or ''}: {message}"
        if isinstance(error, genai_errors.ServerError) or code >= 500:
            return LLMUnavailable(detail)
        if code == 429:
            return LLMRateLimited(detail, retry_after_s=_retry_after(error))
        if code in (401, 403) or _BAD_KEY_TEXT.search(message):
            return LLMAuthError(detail)
        if code == 408:
            return LLMTimeout(detail)
        if _CONTEXT_OVERFLOW_TEXT.search(message):
            return ContextOverflow(detail)
        return LLMBadRequest(detail)

def _read_usage(metadata: Any) -> Usage:
    if metadata is None:
        return Usage()
    # Thinking tokens are billed as output but reported apart from the candidates' tokens.
    completion = (metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0)
    return Usage(
        prompt_tokens=int(metadata.prompt_token_count or 0),
        completion_tokens=int(completion),
        cached_prompt_tokens=int(metadata.cached_content_token_count or 0),
    )


def _retry_after(error: genai_errors.APIError) -> float | None:
    """The wait a 429 asks for: a Retry-After header, else the body's google.rpc.RetryInfo."""
    headers = getattr(error.response, "headers", None)
    from_header = parse_retry_after(headers) if headers is not None else None
    if from_header is not None:
        return from_header
    body = error.details if isinstance(error.details, dict) else {}
    inner = body.get("error", body)
    for item in inner.get("details", []) if isinstance(inner, dict) else []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(float(delay[:-1]), 0.0)
            except ValueError:
                return None
    return None


def _enum_name(value: Any) -> str:
    return str(getattr(value, "name", value) or "")
