"""RetryPolicy's schedule and RetryingProvider's behaviour over a scripted in-process provider."""

from __future__ import annotations

import email.utils
import time

import pytest
from wire_servers import RecordingSleep

from cambrian.llm.base import (
    ContextOverflow,
    LLMError,
    LLMProvider,
    LLMRateLimited,
    LLMRequest,
    LLMResponse,
    LLMTimeout,
    LLMUnavailable,
    Message,
    Usage,
)
from cambrian.llm.retry import RetriedResponse, RetryingProvider, RetryPolicy, parse_retry_after

REQUEST = LLMRequest(messages=(Message("user", "hi"),))


class ScriptedProvider:
    """A provider whose successive calls raise or answer as scripted."""

    def __init__(self, *outcomes: LLMError | str) -> None:
        self._outcomes = list(outcomes)
        self.calls = 0

    @property
    def model(self) -> str:
        return "scripted"

    @property
    def context_window(self) -> int | None:
        return 4096

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    async def complete(self, request: LLMRequest) -> LLMResponse:
        outcome = self._outcomes[self.calls]
        self.calls += 1
        if isinstance(outcome, LLMError):
            raise outcome
        return LLMResponse(
            text=outcome,
            model=self.model,
            usage=Usage(prompt_tokens=3, completion_tokens=1),
            finish_reason="stop",
            latency_s=0.01,
            cost_usd=0.002,
        )


def test_backoff_doubles_until_the_cap() -> None:
    policy = RetryPolicy(initial_backoff_s=1.0, max_backoff_s=10.0, jitter=False)

    delays = [policy.backoff_s(attempt) for attempt in range(1, 7)]

    assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_jittered_backoff_stays_within_half_and_full_delay() -> None:
    policy = RetryPolicy(initial_backoff_s=1.0, max_backoff_s=10.0, jitter=True)

    for attempt, full in [(1, 1.0), (3, 4.0), (8, 10.0)]:
        samples = [policy.backoff_s(attempt) for _ in range(200)]
        assert all(full / 2 <= s <= full for s in samples)
        assert len(set(samples)) > 1  # actually jittered


def test_retry_after_wins_but_is_capped() -> None:
    policy = RetryPolicy(initial_backoff_s=1.0, max_backoff_s=30.0)

    assert policy.backoff_s(1, retry_after_s=12.0) == 12.0
    assert policy.backoff_s(1, retry_after_s=600.0) == 30.0
    assert policy.backoff_s(1, retry_after_s=-5.0) == 0.0


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(initial_backoff_s=-1.0)


async def test_retryable_errors_are_retried_with_growing_backoff() -> None:
    inner = ScriptedProvider(LLMTimeout("t1"), LLMUnavailable("u2"), LLMTimeout("t3"), "ok")
    sleep = RecordingSleep()
    policy = RetryPolicy(max_attempts=4, initial_backoff_s=0.5, max_backoff_s=1.5, jitter=False)

    response = await RetryingProvider(inner, policy, sleep=sleep).complete(REQUEST)

    assert isinstance(response, RetriedResponse)
    assert response.text == "ok"
    assert response.attempts == 4
    assert response.cost_usd == 0.002  # the inner response's fields are carried over
    assert inner.calls == 4
    assert sleep.delays == [0.5, 1.0, 1.5]


async def test_first_try_success_reports_one_attempt() -> None:
    inner = ScriptedProvider("ok")
    sleep = RecordingSleep()

    response = await RetryingProvider(inner, sleep=sleep).complete(REQUEST)

    assert response.attempts == 1
    assert sleep.delays == []


async def test_rate_limit_retry_after_sets_the_delay() -> None:
    inner = ScriptedProvider(LLMRateLimited("slow down", retry_after_s=2.5), "ok")
    sleep = RecordingSleep()

    response = await RetryingProvider(inner, RetryPolicy(), sleep=sleep).complete(REQUEST)

    assert response.attempts == 2
    assert sleep.delays == [2.5]


async def test_non_retryable_error_raises_immediately() -> None:
    inner = ScriptedProvider(ContextOverflow("too long"), "never")
    sleep = RecordingSleep()

    with pytest.raises(ContextOverflow, match="too long"):
        await RetryingProvider(inner, sleep=sleep).complete(REQUEST)

    assert inner.calls == 1
    assert sleep.delays == []


async def test_last_error_is_reraised_with_attempt_count() -> None:
    inner = ScriptedProvider(*[LLMUnavailable(f"down #{i}") for i in range(1, 4)])
    policy = RetryPolicy(max_attempts=3, initial_backoff_s=0.001, max_backoff_s=0.002)

    # Real asyncio.sleep here: the backoff is tiny.
    with pytest.raises(LLMUnavailable) as raised:
        await RetryingProvider(inner, policy).complete(REQUEST)

    assert inner.calls == 3
    assert "down #3" in str(raised.value)
    assert "gave up after 3 attempts" in str(raised.value)


async def test_wrapper_is_itself_a_provider() -> None:
    inner = ScriptedProvider("ok")
    wrapper = RetryingProvider(inner)

    assert isinstance(wrapper, LLMProvider)
    assert wrapper.model == "scripted"
    assert wrapper.context_window == 4096
    assert wrapper.count_tokens("a b c") == 3
    assert wrapper.inner is inner


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None
    future = email.utils.formatdate(time.time() + 60, usegmt=True)
    seconds = parse_retry_after({"retry-after": future})
    assert seconds is not None and 30 < seconds <= 61
