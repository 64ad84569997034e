"""GeminiProvider against a local server speaking the generateContent wire protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from wire_servers import (
    RecordingSleep,
    ScriptedReply,
    WireServer,
    gemini_error,
    gemini_response,
    unused_port,
)

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
from cambrian.llm.gemini_provider import GeminiProvider
from cambrian.llm.pricing import ModelPrices
from cambrian.llm.retry import RetryingProvider, RetryPolicy

MODEL = "gemini-2.5-flash"
PRICES = ModelPrices(input_per_mtok=0.3, output_per_mtok=2.5, cached_input_per_mtok=0.075)
FAST_RETRIES = RetryPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.05)

REQUEST = LLMRequest(
    messages=(
        Message("system", "You write Python."),
        Message("user", "Improve this function."),
        Message("assistant", "Which one?"),
        Message("user", "The parent program."),
    ),
    params=GenerationParams(temperature=0.2, max_tokens=300, top_p=0.95, stop=("```\n",), seed=11),
)


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as wire_server:
        yield wire_server


@pytest.fixture
async def provider(server: WireServer) -> AsyncIterator[GeminiProvider]:
    llm = GeminiProvider(
        MODEL, base_url=server.base_url, api_key="gem-test", prices=PRICES, api_version="v1beta"
    )
    yield llm
    await llm.aclose()


async def test_successful_call_maps_text_usage_and_cost(
    server: WireServer, provider: GeminiProvider
) -> None:
    server.enqueue(
        gemini_response(
            [
                {"text": "Considering options...", "thought": True},
                {"text": "def f():"},
                {"text": " return 1"},
            ],
            prompt_tokens=1000,
            candidates_tokens=150,
            thoughts_tokens=50,
            cached_tokens=400,
        )
    )

    response = await provider.complete(REQUEST)

    assert isinstance(provider, LLMProvider)
    assert response.text == "def f(): return 1"  # the thought summary is left out
    assert response.model == MODEL
    assert response.finish_reason == "stop"
    assert response.usage.prompt_tokens == 1000
    assert response.usage.cached_prompt_tokens == 400
    assert response.usage.completion_tokens == 200  # thinking tokens are billed as output
    assert response.cost_usd == pytest.approx((600 * 0.3 + 400 * 0.075 + 200 * 2.5) / 1e6)
    assert response.cost_known


async def test_server_receives_system_instruction_roles_and_config(
    server: WireServer, provider: GeminiProvider
) -> None:
    server.enqueue(gemini_response([{"text": "ok"}]))

    await provider.complete(REQUEST)

    [received] = server.requests
    assert received.path == f"/v1beta/models/{MODEL}:generateContent"
    assert received.header("x-goog-api-key") == "gem-test"
    body = received.body
    assert body["systemInstruction"]["parts"] == [{"text": "You write Python."}]
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Improve this function."}]},
        {"role": "model", "parts": [{"text": "Which one?"}]},
        {"role": "user", "parts": [{"text": "The parent program."}]},
    ]
    config = body["generationConfig"]
    assert config["temperature"] == 0.2
    assert config["maxOutputTokens"] == 300
    assert config["topP"] == 0.95
    assert config["stopSequences"] == ["```\n"]
    assert config["seed"] == 11


async def test_max_tokens_finish_marks_reply_truncated(
    server: WireServer, provider: GeminiProvider
) -> None:
    server.enqueue(gemini_response([{"text": "def f("}], finish_reason="MAX_TOKENS"))

    response = await provider.complete(REQUEST)

    assert response.finish_reason == "length"
    assert response.truncated


async def test_rate_limit_with_retry_after_is_retried_then_succeeds(
    server: WireServer, provider: GeminiProvider
) -> None:
    server.enqueue(
        gemini_error(
            429, "RESOURCE_EXHAUSTED", "Resource has been exhausted", headers={"Retry-After": "3"}
        ),
        gemini_response([{"text": "done"}]),
    )
    sleep = RecordingSleep()

    response = await RetryingProvider(provider, RetryPolicy(), sleep=sleep).complete(REQUEST)

    assert response.text == "done"
    assert response.attempts == 2
    assert len(server.requests) == 2
    assert sleep.delays == [3.0]


async def test_rate_limit_retry_info_in_body_is_honoured_up_to_the_cap(
    server: WireServer, provider: GeminiProvider
) -> None:
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "45s"}
    server.enqueue(
        ScriptedReply(
            status=429,
            body={
                "error": {
                    "code": 429,
                    "message": "You exceeded your current quota",
                    "status": "RESOURCE_EXHAUSTED",
                    "details": [retry_info],
                }
            },
        ),
        gemini_response([{"text": "done"}]),
    )
    sleep = RecordingSleep()
    policy = RetryPolicy(max_backoff_s=20.0)

    response = await RetryingProvider(provider, policy, sleep=sleep).complete(REQUEST)

    assert response.attempts == 2
    assert sleep.delays == [20.0]  # asked for 45 s, capped by max_backoff_s


async def test_server_errors_are_retried_until_success(
    server: WireServer, provider: GeminiProvider
) -> None:
    server.enqueue(
        gemini_error(500, "INTERNAL", "An internal error has occurred"),
        gemini_error(503, "UNAVAILABLE", "The model is overloaded"),
        gemini_response([{"text": "done"}]),
    )

    response = await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert response.text == "done"
    assert response.attempts == 3
    assert len(server.requests) == 3


async def test_bad_request_is_not_retried(server: WireServer, provider: GeminiProvider) -> None:
    server.enqueue(
        gemini_error(400, "INVALID_ARGUMENT", "Invalid value at 'generation_config.temperature'"),
        gemini_response([{"text": "never"}]),
    )

    with pytest.raises(LLMBadRequest, match="generation_config.temperature") as raised:
        await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert type(raised.value) is LLMBadRequest
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        gemini_error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
        gemini_error(403, "PERMISSION_DENIED", "Permission denied on resource project."),
        # What the Gemini API really answers for a wrong key.
        gemini_error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
    ],
    ids=["401", "403", "invalid-key"],
)
async def test_credential_errors_map_to_auth_error(
    server: WireServer, provider: GeminiProvider, reply: ScriptedReply
) -> None:
    server.enqueue(reply)

    with pytest.raises(LLMAuthError):
        await RetryingProvider(provider, FAST_RETRIES).complete(REQUEST)

    assert len(server.requests) == 1


async def test_input_token_limit_maps_to_context_overflow(
    server: WireServer, provider: GeminiProvider
) -> None:
    server.enqueue(
        gemini_error(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed "
            "(1048576).",
        )
    )

    with pytest.raises(ContextOverflow, match="input token count"):
        await provider.complete(REQUEST)


async def test_blocked_prompt_is_a_bad_request(
    server: WireServer, provider: GeminiProvider
) -> None:
    server.enqueue(ScriptedReply(body={"promptFeedback": {"blockReason": "SAFETY"}}))

    with pytest.raises(LLMBadRequest, match="SAFETY"):
        await provider.complete(REQUEST)


async def test_slow_server_times_out(server: WireServer) -> None:
    llm = GeminiProvider(MODEL, base_url=server.base_url, api_key="k", timeout_s=0.5)
    server.enqueue(ScriptedReply(body=gemini_response([{"text": "late"}]).body, delay_s=3.0))
    try:
        with pytest.raises(LLMTimeout):
            await llm.complete(REQUEST)
    finally:
        await llm.aclose()


async def test_connection_refused_is_unavailable() -> None:
    llm = GeminiProvider(MODEL, base_url=f"http://127.0.0.1:{unused_port()}", api_key="k")
    try:
        with pytest.raises(LLMUnavailable, match="unreachable"):
            await llm.complete(REQUEST)
    finally:
        await llm.aclose()


@pytest.mark.parametrize(
    "reply",
    [ScriptedReply(body={"candidates": []}), ScriptedReply(body="<html>not json</html>")],
    ids=["no-candidates", "not-json"],
)
async def test_malformed_bodies_are_unavailable(
    server: WireServer, provider: GeminiProvider, reply: ScriptedReply
) -> None:
    server.enqueue(reply)

    with pytest.raises(LLMUnavailable):
        await provider.complete(REQUEST)
