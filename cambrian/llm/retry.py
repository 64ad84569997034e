"""Retrying transient provider failures with exponential backoff.

Providers never retry on their own (their SDKs are built with ``max_retries=0``); this wrapper
is the single place that decides. Only errors marked ``retryable`` (timeouts, rate limits,
unavailability) are retried; a bad request fails on the first attempt. Each attempt that failed
and is retried is told to ``ATTEMPT_FAILED`` (set by the gateway, which records it in the
ledger: every request a server was sent is a ledger row, not only the last of a call's).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, fields

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from cambrian.llm.base import LLMError, LLMProvider, LLMRateLimited, LLMRequest, LLMResponse

logger = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class FailedAttempt:
    """One attempt of a call that failed and is tried again."""

    error: LLMError
    number: int  # 1-based
    of: int  # the policy's max_attempts
    latency_s: float


# Told of each failed attempt that is retried, in the calling task's context (the gateway's
# ledger record); None: nobody is listening (a provider used outside the gateway).
ATTEMPT_FAILED: ContextVar[Callable[[FailedAttempt], None] | None] = ContextVar(
    "cambrian_attempt_failed", default=None)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.initial_backoff_s < 0 or self.max_backoff_s < 0:
            raise ValueError("backoff durations must not be negative")

    def backoff_s(self, failed_attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after attempt number ``failed_attempt`` (1-based) failed.

        A server-supplied Retry-After wins over the exponential schedule; both are capped by
        ``max_backoff_s``. Jitter draws from the upper half of the delay so the schedule still
        grows while concurrent callers spread out.
        """
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.max_backoff_s)
        exponent = min(max(failed_attempt - 1, 0), 60)
        delay = min(self.initial_backoff_s * 2.0**exponent, self.max_backoff_s)
        if self.jitter:
            return delay / 2 + random.uniform(0.0, delay / 2)
        return delay


@dataclass(frozen=True)
class RetriedResponse(LLMResponse):
    """An :class:`LLMResponse` that also says how many attempts it took (for the ledger)."""

    attempts: int = 1


class RetryingProvider:
    """Wraps any :class:`LLMProvider` and retries its retryable failures."""

    def __init__(
        self,
        inner: LLMProvider,
        policy: RetryPolicy | None = None,
        *,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._inner = inner
        self._policy = policy or RetryPolicy()
        self._sleep = sleep

    @property
    def inner(self) -> LLMProvider:
        return self._inner

    @property
    def policy(self) -> RetryPolicy:
        return self._policy

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def context_window(self) -> int | None:
        return self._inner.context_window

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    async def unreachable(self) -> str | None:
        check = getattr(self._inner, "unreachable", None)
        return await check() if check is not None else None

    async def complete(self, request: LLMRequest) -> RetriedResponse:
        started = time.perf_counter()

        def failed(state: RetryCallState) -> None:
            self._log_retry(state)
            error = state.outcome.exception() if state.outcome is not None else None
            report = ATTEMPT_FAILED.get()
            if report is not None and isinstance(error, LLMError):
                report(FailedAttempt(error, state.attempt_number, self._policy.max_attempts,
                                     time.perf_counter() - started))

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._policy.max_attempts),
            retry=retry_if_exception(_is_retryable),
            wait=self._wait_s,
            sleep=self._sleep,
            before_sleep=failed,
            reraise=True,
        )
        attempts = 0
        try:
            async for attempt in retrying:
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    started = time.perf_counter()
                    response = await self._inner.complete(request)
        except LLMError as error:
            error.latency_s = time.perf_counter() - started  # the last attempt's
            if error.retryable:
                detail = error.args[0] if error.args else type(error).__name__
                error.args = (f"{detail} (gave up after {attempts} attempts)", *error.args[1:])
            raise
        return _with_attempts(response, attempts)

    def _wait_s(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        retry_after = error.retry_after_s if isinstance(error, LLMRateLimited) else None
        return self._policy.backoff_s(state.attempt_number, retry_after)

    def _log_retry(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        sleep_s = state.next_action.sleep if state.next_action is not None else 0.0
        logger.info(
            "%s attempt %d failed (%s: %s); retrying in %.2fs",
            self.model,
            state.attempt_number,
            type(error).__name__,
            error,
            sleep_s,
        )


def _is_retryable(error: BaseException) -> bool:
    return isinstance(error, LLMError) and error.retryable


def _with_attempts(response: LLMResponse, attempts: int) -> RetriedResponse:
    values = {f.name: getattr(response, f.name) for f in fields(LLMResponse)}
    return RetriedResponse(**values, attempts=attempts)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a server asked us to wait, from ``retry-after-ms`` or ``retry-after`` headers.

    ``retry-after`` may be a number of seconds or an HTTP date. Returns None when absent or
    unparseable. ``headers`` should be case-insensitive (as httpx headers are) or lower-cased.
    """
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
