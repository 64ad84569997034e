"""What every provider that calls a model over HTTP shares: the model's label, window and
prices, the token estimate, timing and pricing a call, and turning whatever goes wrong into one
of the :class:`cambrian.llm.base.LLMError` classes, so the gateway can classify it in one line.

A subclass speaks one wire protocol: ``_send`` makes the request (through the vendor's SDK or
plain HTTP), ``_read`` takes the reply apart, ``_sdk_error`` maps the SDK's own exceptions.
Anything else raised while sending or reading (a body that is not JSON, a field of the wrong
type) is a :class:`LLMMalformedReply`: retried, then reported in one line.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from abc import ABC, abstractmethod
from typing import Any
from urllib.parse import urlparse

import httpx

from cambrian.llm.base import (
    FinishReason,
    LLMError,
    LLMMalformedReply,
    LLMRequest,
    LLMResponse,
    Usage,
    estimate_tokens,
)
from cambrian.llm.pricing import ModelPrices, lookup_prices, priced

PREVIEW_CHARS = 200
CONNECT_TIMEOUT_S = 3.0
ANSWER_TIMEOUT_S = 10.0
DEFAULT_PORTS = {"http": 80, "https": 443}


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context every HTTP client of this process shares (httpx's default, built once:
    each one reads the CA bundle, tens of milliseconds)."""
    return httpx.create_ssl_context()


def preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "..."


async def server_answers(base_url: str) -> str | None:
    """None when an HTTP server answers at ``base_url`` (any status: a 404 or 401 is an
    answer), else why not: nothing accepts a connection there, or something does but sends no
    HTTP answer within ``ANSWER_TIMEOUT_S`` (a hung server would otherwise cost every call
    its whole timeout). No model is called."""
    parsed = urlparse(base_url)
    host = parsed.hostname
    if not host:
        return f"base_url {base_url!r} names no host"
    port = parsed.port or DEFAULT_PORTS.get(parsed.scheme, 80)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT_S)
    except (OSError, asyncio.TimeoutError) as exc:
        return f"nothing answers at {host}:{port} ({type(exc).__name__}: {exc})".rstrip(": )") + ")"
    writer.close()
    timeout = httpx.Timeout(ANSWER_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    try:
        async with httpx.AsyncClient(timeout=timeout, verify=tls_context()) as client:
            await client.get(base_url)
    except httpx.TimeoutException:
        return (f"{host}:{port} accepts connections but sent no HTTP answer within "
                f"{ANSWER_TIMEOUT_S:g} s (timed out)")
    except httpx.HTTPError as exc:
        return (f"{host}:{port} accepts connections but does not answer as an HTTP server "
                f"({type(exc).__name__}: {preview(str(exc))})")
    return None


class RemoteProvider(ABC):
    default_host = "the vendor's API"  # shown in messages when no base_url is set

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 timeout_s: float = 120.0, context_window: int | None = None,
                 prices: ModelPrices | None = None) -> None:
        self._model = model
        self._base_url = base_url
        self._timeout_s = timeout_s
        self._context_window = context_window
        self._prices = self._resolve_prices(prices)

    def _resolve_prices(self, prices: ModelPrices | None) -> ModelPrices | None:
        """The explicit prices, else the built-in table's; None when the cost is unknown."""
        return lookup_prices(self._model, prices)

    @property
    def model(self) -> str:
        return self._model

    @property
    def context_window(self) -> int | None:
        return self._context_window

    @property
    def prices(self) -> ModelPrices | None:
        """The prices used for ``cost_usd``; None when the model's cost is unknown."""
        return self._prices

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    async def unreachable(self) -> str | None:
        """Why the server cannot be reached (None when it answers HTTP, or when no base_url is
        set: the vendor's API is checked by the first call)."""
        return await server_answers(self._base_url) if self._base_url else None

    def label(self) -> str:
        return f"{self._model} @ {self._base_url or self.default_host}"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        started = time.perf_counter()
        try:
            raw = await self._send(request)
        except LLMError:
            raise
        except Exception as error:  # noqa: BLE001 - every failure becomes an LLMError
            mapped = self._sdk_error(error)
            raise (mapped or LLMMalformedReply(
                f"{self.label()} sent an unreadable reply ({type(error).__name__}: "
                f"{preview(str(error))})")) from error
        latency_s = time.perf_counter() - started
        try:
            text, finish_reason, usage = self._read(raw)
        except LLMError:
            raise
        except Exception as error:  # noqa: BLE001
            raise LLMMalformedReply(f"{self.label()} sent a reply that is not the protocol's "
                                    f"({type(error).__name__}: {preview(raw)})") from error
        cost, cost_known = priced(self._prices, usage)
        return LLMResponse(text=text, model=self._model, usage=usage, finish_reason=finish_reason,
                           latency_s=latency_s, cost_usd=cost, cost_known=cost_known)

    @abstractmethod
    async def _send(self, request: LLMRequest) -> Any:
        """Make the call; the vendor's reply object (or parsed JSON)."""

    @abstractmethod
    def _read(self, raw: Any) -> tuple[str, FinishReason, Usage]:
        """The reply's text, why it stopped, and its token usage."""

    def _sdk_error(self, error: Exception) -> LLMError | None:
        """The LLMError an SDK exception means; None for anything else (a malformed reply)."""
        return None
