"""AnthropicProvider against a local server speaking the Messages API wire protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from wire_servers import (
    RecordingSleep,
    ScriptedReply,
    WireServer,
    anthropic_error,
    anthropic_message,
    anthropic_text,
    unused_port,
)

from cambrian.llm.anthropic_provider import AnthropicProvider
from cambrian.llm.base import (
    ContextOverflow,
    GenerationParams,
    LLMAuthError,
    LLMBadRequest,
    LLMProvider,
    LLMRequest,
    LLMTimeout,
    LLMUnavailable,
    Message,
)
from cambrian.llm.pricing import ModelPrices
from cambrian.llm.retry import RetryingProvider, RetryPolicy

MODEL = "claude-haiku-4-5"
PRICES = ModelPrices(input_per_mtok=3.0, output_per_mtok=15.0, cached_input_per_mtok=0.3)
FAST_RETRIES = RetryPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.05)

REQUEST = LLMRequest(
    messages=(
        Message("system", "You write Python."),
        Message("system", "Answer with one code block."),
        Message("user", "Here is the parent program."),
        Message("user", "Improve it."),
        Message("assistant", "```python"),
        Message("user", "Continue."),
    ),
    params=GenerationParams(temperature=0.4, max_tokens=512, stop=("```\n",)),
)


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as wire_server:
        yield wire_server


@pytest.fixture
async def provider(server: WireServer) -> AsyncIterator[AnthropicProvider]:
    llm = AnthropicProvider(MODEL, base_url=server.base_url, api_key="sk-ant-test", prices=PRICES)
    yield llm
    await llm.aclose()


async def test_successful_call_maps_text_usage_and_cost(
    server: WireServer, provider: AnthropicProvider
) -> None:
    server.enqueue(
        anthropic_message(
            [
                {"type": "thinking", "thinking": "Let me think...", "signature": "sig"},
                anthropic_text("def f():\n"),
                anthropic_text("    return 1\n"),
            ],
            input_tokens=600,
            output_tokens=200,
            cache_read_input_tokens=400,
        )
    )

    response = await provider.complete(REQUEST)

    assert isinstance(provider, LLMProvider)
    assert response.text == "def f():\n    return 1\n"  # thinking block left out
    assert response.model == MODEL
    assert response.finish_reason == "stop"
    # Anthropic's input_tokens excludes cache reads; the whole prompt is 600 + 400.
    assert response.usage.prompt_tokens == 1000
    assert response.usage.cached_prompt_tokens == 400
    assert response.usage.completion_tokens == 200
    assert response.cost_usd == pytest.approx((600 * 3.0 + 400 * 0.3 + 200 * 15.0) / 1e6)
    assert response.cost_known


async def test_server_receives_system_apart_and_alternating_turns(
    server: WireServer, provider: AnthropicProvider
) -> None:
    server.enqueue(anthropic_message([anthropic_text("ok")]))

    await provider.complete(REQUEST)

    [received] = server.requests
    assert received.path == "/v1/messages"
    assert "sk-ant-test" in (received.header("x-api-key") or received.header("authorization") or "")
    assert received.header("anthropic-version")
    body = received.body
    assert body["model"] == MODEL
    assert body["system"] == "You write Python.\n\nAnswer with one code block."
    assert body["messages"] == [
        {"role": "user", "content": "Here is the parent program.\n\nImprove it."},
        {"role": "assistant", "content": "```python"},
        {"role": "user", "content": "Continue."},
    ]
    assert body["temperature"] == 0.4
    assert body["max_tokens"] == 512
    assert body["stop_sequences"] == ["```\n"]


async def test_models_that_reject_sampling_params_do_not_get_them(server: WireServer) -> None:
    llm = AnthropicProvider("claude-opus-4-7", base_url=server.base_url, api_key="k")
    server.enqueue(anthropic_message([anthropic_text("ok")]))
    try:
        await llm.complete(REQUEST)
    finally:
        await llm.aclose()

    body = server.requests[0].body
    assert "temperature" not in body
    assert body["max_tokens"] == 512


async def test_unknown_model_cost_is_flagged_unknown(server: WireServer) -> None:
    llm = AnthropicProvider("claude-future-9", base_url=server.base_url, api_key="k")
    server.enqueue(anthropic_message([anthropic_text("ok")], input_tokens=100, output_tokens=10))
    try:
        response = await llm.complete(REQUEST)
    finally:
        await llm.aclose()

    assert llm.prices is None
    assert response.cost_usd == 0.0
    assert not response.cost_known


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [
        ("max_tokens", "length"),
        ("stop_sequence", "stop"),
        ("end_turn", "stop"),
        ("refusal", "other"),
    ],
)
async def test_stop_reasons_map_to_finish_reasons(
    server: WireServer, provider: AnthropicProvider, stop_reason: str, expected: str
) -> None:
    server.enqueue(anthropic_message([anthropic_text("def f(")], stop_reason=stop_reason))

    response = await provider.complete(REQUEST)

    assert response.finish_reason == expected
    assert response.truncated == (expected == "length")


async def test_rate_limit_with_retry_after_is_retried_then_succeeds(
    server: WireServer, provider: AnthropicProvider
) -> None:
    server.enqueue(
        anthropic_error(
            429, "rate_limit_error", "Number of requests exceeded", headers={"retry-after": "4"}
        ),
        anthropic_message([anthropic_text("done")]),
    )
    sleep = RecordingSleep()

    response = await RetryingProvider(provider, RetryPolicy(), sleep=sleep).complete(REQUEST)

    assert response.text == "done"
    assert response.attempts == 2
    assert len(server.requests) == 2
    assert sleep.delays == [4.0]


async def test_overloaded_and_server_errors_are_retried(
    server: WireServer, provider: AnthropicProvider
) -> None:
    server.enqueue(
        anthropic_error(529, "overloaded_error", "Overloaded"),
        anthropic_error(500, "api_error", "Internal server error"),
        anthropic_message([anthropic_text("done")]),
    )

    response = await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert response.text == "done"
    assert response.attempts == 3
    assert len(server.requests) == 3


async def test_bad_request_is_not_retried(server: WireServer, provider: AnthropicProvider) -> None:
    server.enqueue(
        anthropic_error(400, "invalid_request_error", "messages: roles must alternate"),
        anthropic_message([anthropic_text("never")]),
    )

    with pytest.raises(LLMBadRequest, match="roles must alternate") as raised:
        await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert type(raised.value) is LLMBadRequest
    assert len(server.requests) == 1


async def test_unauthorized_maps_to_auth_error(
    server: WireServer, provider: AnthropicProvider
) -> None:
    server.enqueue(anthropic_error(401, "authentication_error", "invalid x-api-key"))

    with pytest.raises(LLMAuthError, match="invalid x-api-key"):
        await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert len(server.requests) == 1


async def test_prompt_too_long_maps_to_context_overflow(
    server: WireServer, provider: AnthropicProvider
) -> None:
    server.enqueue(
        anthropic_error(
            400, "invalid_request_error", "prompt is too long: 212345 tokens > 200000 maximum"
        )
    )

    with pytest.raises(ContextOverflow, match="prompt is too long"):
        await provider.complete(REQUEST)


async def test_slow_server_times_out(server: WireServer) -> None:
    llm = AnthropicProvider(MODEL, base_url=server.base_url, api_key="k", timeout_s=0.5)
    server.enqueue(
        ScriptedReply(body=anthropic_message([anthropic_text("late")]).body, delay_s=3.0)
    )
    try:
        with pytest.raises(LLMTimeout):
            await llm.complete(REQUEST)
    finally:
        await llm.aclose()


async def test_connection_refused_is_unavailable() -> None:
    llm = AnthropicProvider(MODEL, base_url=f"http://127.0.0.1:{unused_port()}", api_key="k")
    try:
        with pytest.raises(LLMUnavailable, match="unreachable"):
            await llm.complete(REQUEST)
    finally:
        await llm.aclose()


@pytest.mark.parametrize(
    "reply",
    [ScriptedReply(body={"unexpected": True}), ScriptedReply(body="<html>not json</html>")],
    ids=["wrong-shape", "not-json"],
)
async def test_malformed_bodies_are_unavailable(
    server: WireServer, provider: AnthropicProvider, reply: ScriptedReply
) -> None:
    server.enqueue(reply)

    with pytest.raises(LLMUnavailable, match="without content blocks"):
        await provider.complete(REQUEST)
