"""The LLM gateway: the only way Cambrian calls a model.

One place does, for every call (mutations, novelty judge, scratchpad, prompt rewrites, problem
brief, first program, algorithm hooks, tuning targets): the budget check, the model-label lookup
(an unknown label is a configuration error naming the setting), the model's capabilities
(grammar, context window, local or remote), the call itself, the classification of a failure,
the cap on the reply kept, and the ledger record of messages, reply, tokens, cost and latency
(one row per request sent: an attempt that failed and was retried is a row of its own).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, replace

from cambrian.config import ConfigError, ModelConfig
from cambrian.core.events import LLMCallSkipped
from cambrian.core.outcomes import CallFailure
from cambrian.llm.base import (
    ContextOverflow,
    GenerationParams,
    LLMAuthError,
    LLMBadRequest,
    LLMError,
    LLMMalformedReply,
    LLMProvider,
    LLMRequest,
    LLMResponse,
    LLMUnreachable,
    Message,
)
from cambrian.llm.providers import PROVIDERS
from cambrian.llm.retry import ATTEMPT_FAILED, FailedAttempt
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewContext

BudgetCheck = Callable[[], str | None]
# Why no new call may start, given the calls that would then be in flight (this one included).
CallBudget = Callable[[int], str | None]
UNKNOWN_CONTEXT_WINDOW = 32_768
DEFAULT_MAX_REPLY_CHARS = 200_000  # a reply longer than this is kept cut (and the cut recorded)
# Told each time a call made from the current context returns (answered, failed or skipped):
# side work (``search/side_work.py``) holds proposals back only until its call has returned.
CALL_RETURNED: ContextVar[Callable[[], None] | None] = ContextVar("cambrian_call_returned",
                                                                  default=None)


@dataclass(frozen=True)
class Capabilities:
    label: str
    provider: str  # local | openai | anthropic | gemini (or a registered provider's name)
    local: bool  # runs in this process: calls are slow and serialised, grammars are honoured
    grammar: bool  # honours GBNF grammars (GenerationParams.grammar)
    context_window: int
    count_tokens: Callable[[str], int]


@dataclass(frozen=True)
class CallResult:
    """A call's outcome: a response, or why there is none (``failure`` or ``skipped``)."""

    response: LLMResponse | None
    context_id: int | None  # None only when the call was skipped
    error: str = ""
    failure: CallFailure | None = None
    skipped: str | None = None  # the budget cap that forbade the call

    @property
    def text(self) -> str | None:
        return self.response.text if self.response is not None else None


def classify(error: LLMError) -> CallFailure:
    if isinstance(error, LLMAuthError):
        return CallFailure.AUTH
    if isinstance(error, ContextOverflow):
        return CallFailure.CONTEXT_OVERFLOW
    if isinstance(error, LLMBadRequest):
        return CallFailure.BAD_REQUEST
    if isinstance(error, LLMMalformedReply):
        return CallFailure.MALFORMED_REPLY
    if isinstance(error, LLMUnreachable):
        return CallFailure.UNREACHABLE
    return CallFailure.TRANSIENT


class LLMGateway:
    def __init__(self, models: Sequence[ModelConfig], providers: Mapping[str, LLMProvider],
                 recorder: Recorder | None, *, budget: CallBudget | None = None,
                 max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS) -> None:
        """``budget(calls)`` is asked before every call with the number of calls that would
        then be in flight, so concurrent calls (a proposal beside a scratchpad update) never
        overshoot a cap together. ``recorder`` None: calls made outside a run (the trace
        analyses), with no store to record them in; the caller tallies them."""
        if not models:
            raise ConfigError("llm.models must list at least one model")
        self.models = {m.label: m for m in models}
        self.default_label = models[0].label
        self.providers = dict(providers)
        self.recorder = recorder
        self.budget = budget or (lambda calls: None)
        self.max_reply_chars = max_reply_chars
        self.calls_in_flight = 0

    # ------------------------------------------------------------------ models

    def label(self, label: str | None, setting: str = "model") -> str:
        """The label of the model a setting names (None: the first model); an unknown label is
        a configuration error naming ``setting`` and the configured labels."""
        if label is None:
            return self.default_label
        if label not in self.models:
            raise ConfigError(f"{setting} '{label}' is not one of llm.models: "
                              f"{sorted(self.models)}")
        return label

    def model(self, label: str) -> ModelConfig:
        return self.models[self.label(label)]

    def provider(self, label: str) -> LLMProvider:
        return self.providers[self.label(label)]

    def capabilities(self, label: str | None = None) -> Capabilities:
        model = self.models[self.label(label)]
        provider = self.providers[model.label]
        local = PROVIDERS.get(model.provider).local
        return Capabilities(
            label=model.label, provider=model.provider, local=local, grammar=local,
            context_window=provider.context_window or UNKNOWN_CONTEXT_WINDOW,
            count_tokens=provider.count_tokens)

    async def unreachable(self, label: str) -> str | None:
        """Why the model's server cannot be reached, before any call (None: it can, or the
        provider cannot tell without a call)."""
        check = getattr(self.providers[self.label(label)], "unreachable", None)
        return await check() if check is not None else None

    # ------------------------------------------------------------------ calls

    async def call(self, purpose: str, label: str | None, request: LLMRequest, *,
                   parent_context_id: int | None = None, in_proposal: bool = False,
                   budget_check: BudgetCheck | None = None) -> CallResult:
        """One recorded call. Never raises for a provider failure: the result says what
        happened. A grammar is dropped for models that do not honour one. ``in_proposal``: a
        proposal's own call (a skip is then the proposal's outcome, not a recorded event)."""
        result = await self._call(purpose, label, request, parent_context_id=parent_context_id,
                                  in_proposal=in_proposal, budget_check=budget_check)
        returned = CALL_RETURNED.get()
        if returned is not None:
            returned()
        return result

    async def _call(self, purpose: str, label: str | None, request: LLMRequest, *,
                    parent_context_id: int | None, in_proposal: bool,
                    budget_check: BudgetCheck | None) -> CallResult:
        caps = self.capabilities(label)
        reason = (budget_check() if budget_check is not None
                  else self.budget(self.calls_in_flight + 1))
        if reason is not None:
            if not in_proposal and self.recorder is not None:
                self.recorder.emit(LLMCallSkipped(purpose=purpose, reason=reason))
            return CallResult(None, None, reason, skipped=reason)
        if request.params.grammar is not None and not caps.grammar:
            request = replace(request, params=replace(request.params, grammar=None))
        self.calls_in_flight += 1

        def attempt_failed(attempt: FailedAttempt) -> None:  # a retried attempt: a row too
            error = (f"{type(attempt.error).__name__}: {attempt.error} (attempt "
                     f"{attempt.number} of {attempt.of}; retried)")
            self._record(self._context(purpose, caps, request, None, error, parent_context_id,
                                       latency_s=attempt.latency_s))

        listening = ATTEMPT_FAILED.set(attempt_failed)
        started = time.monotonic()
        try:
            response = await self.providers[caps.label].complete(request)
        except LLMError as exc:
            error = f"{type(exc).__name__}: {exc}"
            context_id = self._record(self._context(  # the last attempt's own latency
                purpose, caps, request, None, error, parent_context_id,
                latency_s=exc.latency_s if exc.latency_s is not None
                else time.monotonic() - started))
            return CallResult(None, context_id, error, classify(exc))
        finally:
            ATTEMPT_FAILED.reset(listening)
            self.calls_in_flight -= 1
        response, dropped = self._capped(response)
        context_id = self._record(self._context(
            purpose, caps, request, response, "", parent_context_id, dropped))
        return CallResult(response, context_id)

    def _record(self, context: NewContext) -> int | None:
        return self.recorder.add_context(context) if self.recorder is not None else None

    async def ask(self, purpose: str, prompt: str, *, label: str | None = None,
                  system: str | None = None, max_tokens: int = 600, temperature: float = 0.5,
                  grammar: str | None = None,
                  budget_check: BudgetCheck | None = None) -> CallResult:
        """A one-turn request (optional system message) outside a proposal."""
        messages = ((Message("system", system),) if system else ()) + (Message("user", prompt),)
        request = LLMRequest(messages, GenerationParams(
            temperature=temperature, max_tokens=max_tokens, grammar=grammar))
        return await self.call(purpose, label, request, budget_check=budget_check)

    def _capped(self, response: LLMResponse) -> tuple[LLMResponse, int]:
        extra = len(response.text) - self.max_reply_chars
        if extra <= 0:
            return response, 0
        return replace(response, text=response.text[:self.max_reply_chars]), extra

    @staticmethod
    def _context(purpose: str, caps: Capabilities, request: LLMRequest,
                 response: LLMResponse | None, error: str, parent_context_id: int | None,
                 dropped: int = 0, latency_s: float = 0.0) -> NewContext:
        usage = response.usage if response is not None else None
        return NewContext(
            purpose=purpose, model=caps.label, provider=caps.provider,
            params=asdict(request.params), messages=[asdict(m) for m in request.messages],
            response_text=response.text if response else None,
            finish_reason=response.finish_reason if response else None,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            cached_tokens=usage.cached_prompt_tokens if usage else 0,
            cost_usd=response.cost_usd if response else 0.0,
            latency_s=response.latency_s if response else latency_s,
            error=error, parent_context_id=parent_context_id, response_dropped_chars=dropped)


class GatewayModel:
    """One model of a gateway with a provider's interface (an :class:`LLMProvider` whose
    ``complete`` raises :class:`LLMError`): what the trace analyses (judge, knob finder, replay) are given, so
    their calls, made outside any run, still go through the gateway's checks and reply cap."""

    def __init__(self, gateway: LLMGateway, label: str, purpose: str) -> None:
        self.gateway = gateway
        self.label = gateway.label(label)
        self.purpose = purpose

    @property
    def model(self) -> str:
        return self.gateway.model(self.label).model

    @property
    def context_window(self) -> int | None:
        return self.gateway.provider(self.label).context_window

    def count_tokens(self, text: str) -> int:
        return self.gateway.provider(self.label).count_tokens(text)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        result = await self.gateway.call(self.purpose, self.label, request)
        if result.response is None:
            raise LLMError(result.error or result.skipped or "no reply")
        return result.response


def standalone_model(config: ModelConfig, provider: LLMProvider, purpose: str) -> GatewayModel:
    """A model called outside a run (no store, no budget): the trace analyses'."""
    return GatewayModel(LLMGateway([config], {config.label: provider}, None), config.label,
                        purpose)
