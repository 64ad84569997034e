"""The LLM gateway as the trace analyses use it: one model called outside any run (no store to
record into), through the same checks, classification and reply cap as a run's calls. The real
OpenAI-compatible provider against the scripted server."""

from __future__ import annotations

import asyncio

import pytest
from support.scripted_llm import ScriptedLLM

from cambrian.config import ModelConfig
from cambrian.llm.base import GenerationParams, LLMError, LLMRequest, Message
from cambrian.llm.gateway import LLMGateway
from cambrian.trace.llm_choice import provider_for

REQUEST = LLMRequest((Message("user", "label this edit"),), GenerationParams(max_tokens=50))


def test_an_analysis_model_calls_through_the_gateway_without_a_store():
    with ScriptedLLM(lambda messages, index: "x" * 500) as llm:
        config = ModelConfig(**llm.model_config(name="judge"))
        model = provider_for(config, "taxonomy")
        model.gateway.max_reply_chars = 100  # the gateway's cap holds for analyses too
        response = asyncio.run(model.complete(REQUEST))
    assert model.model == "scripted" and model.context_window == 16384
    assert response.text == "x" * 100
    assert llm.requests[0][-1]["content"] == "label this edit"


def test_a_failed_analysis_call_raises_one_classified_error():
    with ScriptedLLM(lambda messages, index: "no", status_for=lambda index: 401) as llm:
        config = ModelConfig(**llm.model_config(name="judge"))
        model = provider_for(config)
        with pytest.raises(LLMError, match="LLMAuthError"):
            asyncio.run(model.complete(REQUEST))


def test_a_gateway_without_a_recorder_records_nothing_and_says_so():
    with ScriptedLLM(lambda messages, index: "fine") as llm:
        config = ModelConfig(**llm.model_config(name="m"))
        gateway = LLMGateway([config], {"m": provider_for(config).gateway.provider("m")}, None)
        result = asyncio.run(gateway.call("analysis", "m", REQUEST))
    assert result.text == "fine" and result.context_id is None
