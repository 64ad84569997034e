"""OpenAICompatibleProvider against a local server speaking the Chat Completions wire protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from wire_servers import (
    RecordingSleep,
    ScriptedReply,
    WireServer,
    openai_completion,
    openai_error,
    unused_port,
)

from cambrian.llm.base import (
    ContextOverflow,
    GenerationParams,
    LLMAuthError,
    LLMBadRequest,
    LLMProvider,
    LLMRateLimited,
    LLMRequest,
    LLMTimeout,
    LLMUnavailable,
    Message,
)
from cambrian.llm.openai_compat import OpenAICompatibleProvider
from cambrian.llm.pricing import ModelPrices
from cambrian.llm.retry import RetryingProvider, RetryPolicy

PRICES = ModelPrices(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.5)
FAST_RETRIES = RetryPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.05)

REQUEST = LLMRequest(
    messages=(
        Message("system", "You write Python."),
        Message("user", "Improve this function."),
    ),
    params=GenerationParams(temperature=0.3, max_tokens=256, top_p=0.9, stop=("```\n",), seed=7),
)


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as wire_server:
        yield wire_server


@pytest.fixture
async def provider(server: WireServer) -> AsyncIterator[OpenAICompatibleProvider]:
    llm = OpenAICompatibleProvider(
        "gpt-4.1", base_url=f"{server.base_url}/v1", api_key="sk-test", prices=PRICES
    )
    yield llm
    await llm.aclose()


async def test_successful_call_maps_text_usage_and_cost(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(
        openai_completion(
            "def f(): return 1",
            prompt_tokens=1000,
            completion_tokens=200,
            cached_tokens=400,
        )
    )

    response = await provider.complete(REQUEST)

    assert isinstance(provider, LLMProvider)
    assert response.text == "def f(): return 1"
    assert response.model == "gpt-4.1"
    assert response.finish_reason == "stop"
    assert not response.truncated
    assert response.usage.prompt_tokens == 1000
    assert response.usage.completion_tokens == 200
    assert response.usage.cached_prompt_tokens == 400
    # 600 uncached at $2, 400 cached at $0.5, 200 output at $8 per million tokens.
    assert response.cost_usd == pytest.approx((600 * 2.0 + 400 * 0.5 + 200 * 8.0) / 1e6)
    assert response.cost_known
    assert response.latency_s >= 0


async def test_server_receives_model_messages_and_sampling_params(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(openai_completion("ok"))

    await provider.complete(REQUEST)

    [received] = server.requests
    assert received.path == "/v1/chat/completions"
    assert received.header("authorization") == "Bearer sk-test"
    assert received.body["model"] == "gpt-4.1"
    assert received.body["messages"] == [
        {"role": "system", "content": "You write Python."},
        {"role": "user", "content": "Improve this function."},
    ]
    assert received.body["temperature"] == 0.3
    assert received.body["max_tokens"] == 256
    assert received.body["top_p"] == 0.9
    assert received.body["stop"] == ["```\n"]
    assert received.body["seed"] == 7


async def test_reasoning_model_gets_max_completion_tokens_and_no_sampling_knobs(
    server: WireServer,
) -> None:
    llm = OpenAICompatibleProvider(
        "o4-mini", base_url=server.base_url, api_key="k", reasoning_model=True
    )
    server.enqueue(openai_completion("ok"))
    try:
        await llm.complete(REQUEST)
    finally:
        await llm.aclose()

    body = server.requests[0].body
    assert body["max_completion_tokens"] == 256
    assert "max_tokens" not in body
    assert "temperature" not in body and "top_p" not in body
    assert body["seed"] == 7


async def test_extra_body_is_merged_into_the_request(server: WireServer) -> None:
    llm = OpenAICompatibleProvider(
        "qwen2.5-coder:7b", base_url=server.base_url, extra_body={"top_k": 40}
    )
    server.enqueue(openai_completion("ok"))
    try:
        await llm.complete(REQUEST)
    finally:
        await llm.aclose()

    assert server.requests[0].body["top_k"] == 40
    # No key configured for a local server: the SDK still needs one, a placeholder is sent.
    assert server.requests[0].header("authorization") == "Bearer not-needed"


async def test_unknown_model_on_loopback_is_a_free_local_model(server: WireServer) -> None:
    llm = OpenAICompatibleProvider("my-local-finetune", base_url=f"{server.base_url}/v1")
    server.enqueue(openai_completion("ok", prompt_tokens=5000, completion_tokens=500))
    try:
        response = await llm.complete(REQUEST)
    finally:
        await llm.aclose()

    assert response.cost_usd == 0.0
    assert response.cost_known


async def test_deepseek_cache_hit_field_counts_as_cached(server: WireServer) -> None:
    reply = openai_completion("ok", prompt_tokens=100, completion_tokens=10)
    reply.body["usage"]["prompt_cache_hit_tokens"] = 64
    server.enqueue(reply)
    llm = OpenAICompatibleProvider("deepseek-chat", base_url=server.base_url, api_key="k")
    try:
        response = await llm.complete(REQUEST)
    finally:
        await llm.aclose()

    assert response.usage.cached_prompt_tokens == 64
    assert response.cost_usd == pytest.approx((36 * 0.28 + 64 * 0.028 + 10 * 0.42) / 1e6)


async def test_length_finish_marks_reply_truncated(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(openai_completion("def f(", finish_reason="length"))

    response = await provider.complete(REQUEST)

    assert response.finish_reason == "length"
    assert response.truncated
    assert response.text == "def f("


async def test_rate_limit_with_retry_after_is_retried_then_succeeds(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(
        openai_error(429, "Rate limit reached", type_="requests", headers={"Retry-After": "7"}),
        openai_completion("second time lucky"),
    )
    sleep = RecordingSleep()
    retrying = RetryingProvider(provider, RetryPolicy(max_backoff_s=30.0), sleep=sleep)

    response = await retrying.complete(REQUEST)

    assert response.text == "second time lucky"
    assert response.attempts == 2
    assert len(server.requests) == 2
    assert sleep.delays == [7.0]  # the server's Retry-After, not the exponential schedule


async def test_rate_limit_error_carries_retry_after(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(
        openai_error(429, "slow down", type_="requests", headers={"retry-after-ms": "1500"})
    )

    with pytest.raises(LLMRateLimited) as raised:
        await provider.complete(REQUEST)

    assert raised.value.retry_after_s == pytest.approx(1.5)


async def test_server_errors_are_retried_until_success(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(
        openai_error(500, "The server had an error", type_="server_error"),
        openai_error(503, "The engine is currently overloaded", type_="server_error"),
        openai_completion("finally"),
    )

    response = await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert response.text == "finally"
    assert response.attempts == 3
    assert len(server.requests) == 3


async def test_retries_give_up_after_max_attempts(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(*[openai_error(503, "overloaded", type_="server_error")] * 3)

    with pytest.raises(LLMUnavailable, match="gave up after 3 attempts"):
        await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert len(server.requests) == 3


async def test_bad_request_is_not_retried(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(openai_error(400, "Invalid value for 'temperature'"), openai_completion("never"))

    with pytest.raises(LLMBadRequest, match="Invalid value for 'temperature'") as raised:
        await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert type(raised.value) is LLMBadRequest
    assert len(server.requests) == 1


async def test_exhausted_quota_is_not_treated_as_transient(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(
        openai_error(
            429,
            "You exceeded your current quota",
            type_="insufficient_quota",
            code="insufficient_quota",
        )
    )

    with pytest.raises(LLMBadRequest, match="quota"):
        await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert len(server.requests) == 1


async def test_unauthorized_maps_to_auth_error(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.enqueue(openai_error(401, "Incorrect API key provided", code="invalid_api_key"))

    with pytest.raises(LLMAuthError, match="Incorrect API key"):
        await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        # OpenAI / DeepSeek
        openai_error(
            400,
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130000 tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
        ),
        # llama.cpp server
        openai_error(
            400,
            "the request exceeds the available context size, try increasing it",
            type_="exceed_context_size_error",
        ),
        # vLLM (no code, only the message)
        openai_error(
            400, "This model's maximum context length is 4096 tokens.", type_="BadRequestError"
        ),
    ],
    ids=["openai", "llama.cpp", "vllm"],
)
async def test_context_length_errors_map_to_context_overflow(
    server: WireServer, provider: OpenAICompatibleProvider, reply: ScriptedReply
) -> None:
    server.enqueue(reply)

    with pytest.raises(ContextOverflow):
        await provider.complete(REQUEST)


async def test_slow_server_times_out(server: WireServer) -> None:
    llm = OpenAICompatibleProvider("gpt-4.1", base_url=server.base_url, api_key="k", timeout_s=0.5)
    server.enqueue(ScriptedReply(body=openai_completion("late").body, delay_s=3.0))
    try:
        with pytest.raises(LLMTimeout):
            await llm.complete(REQUEST)
    finally:
        await llm.aclose()


async def test_connection_refused_is_unavailable() -> None:
    llm = OpenAICompatibleProvider("gpt-4.1", base_url=f"http://127.0.0.1:{unused_port()}/v1")
    try:
        with pytest.raises(LLMUnavailable, match="unreachable"):
            await llm.complete(REQUEST)
    finally:
        await llm.aclose()


@pytest.mark.parametrize(
    "reply",
    [
        ScriptedReply(body={"id": "x", "object": "chat.completion", "choices": []}),
        ScriptedReply(body={"unexpected": True}),
        ScriptedReply(body="<html>not json</html>"),
    ],
    ids=["empty-choices", "wrong-shape", "not-json"],
)
async def test_malformed_bodies_are_unavailable(
    server: WireServer, provider: OpenAICompatibleProvider, reply: ScriptedReply
) -> None:
    server.enqueue(reply)

    with pytest.raises(LLMUnavailable, match="without choices"):
        await provider.complete(REQUEST)
