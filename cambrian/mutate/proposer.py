"""Turn a sampled parent into a child program with an LLM.

One call to :meth:`Proposer.propose` is one conversation: the model replies, the reply is parsed
and applied; when that fails, the precise error goes back to the model (Reflexion, seed 000 §3.2)
for up to ``max_patch_attempts`` turns. Every call (through the LLM gateway) and every failed
attempt (through the recorder) is stored, so a run's trace shows what the model saw and why a
reply was refused. A usable child then passes the child filters (``filters.py``) in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from cambrian.config import RunConfig
from cambrian.core.components import make_component, register_component
from cambrian.core.outcomes import ProposalOutcome
from cambrian.core.status import CandidateStatus
from cambrian.lang.languages import Language
from cambrian.llm.base import GenerationParams, LLMRequest, LLMResponse, Message
from cambrian.llm.ensemble import Arm
from cambrian.llm.gateway import LLMGateway
from cambrian.mutate.candidate_checks import Refusal, child_from_reply
from cambrian.mutate.file_replies import reply_shape
from cambrian.mutate.filters import ChildFilter, FilterVerdict, ProposedChild
from cambrian.mutate.focus import NOTE_KEY as FOCUS_NOTE
from cambrian.mutate.formats.choice import format_named, reply_format
from cambrian.mutate.grammars import grammar_for
from cambrian.mutate.intents import INTENTS
from cambrian.mutate.prompts import ContextBuilder, ProgramView, PromptTooLarge
from cambrian.mutate.reply_text import CODE_BLOCK_STOP, stopped_reply_text
from cambrian.mutate.setting_lines import offers_setting_lines
from cambrian.mutate.step.wiring import InitialEntry
from cambrian.mutate.strategies import NOTE_KEY as STRATEGY_NOTE
from cambrian.mutate.tuning_targets import tuning_target_lines
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.task.folder import Task
from cambrian.task.program_files import file_language

RETRY_MIN_TEMPERATURE = 0.7


@dataclass(frozen=True)
class ProposalRequest:
    generation: int
    island: int
    kind: str  # diff | full | cross | fix
    parent: ProgramView
    inspirations: tuple[ProgramView, ...] = ()
    notes: tuple[str, ...] = ()
    # Child filters (by name) that may no longer refuse in this generation: it has used up
    # their rejections (novelty.max_attempts, trace_feedback.max_rejections).
    relaxed_filters: frozenset[str] = frozenset()
    # Stored in the notes of whatever candidate row this proposal produces (which guidance,
    # system prompt, mutation intent... it was given), so the trace can tell.
    tags: dict[str, Any] = field(default_factory=dict)
    preamble: str | None = None  # a co-evolved system prompt replacing the default role text
    temperature: float | None = None  # None: the arm's (a search phase may set it)
    models: frozenset[str] = frozenset()  # model labels this proposal may use (empty: any)


@dataclass
class ProposalResult:
    outcome: ProposalOutcome
    candidate_id: int | None = None  # the pending child when the outcome is CHILD
    llm_calls: int = 0
    errors: list[str] = field(default_factory=list)
    model: str | None = None
    refused_by: str | None = None  # the child filter that refused the child


@runtime_checkable
class Generator(Protocol):
    """What the loop needs of a generator (``search.generator``; ``Proposer`` below is the
    default): a parent request and a model arm in, a checked and stored child (or why there
    is none) out."""

    prompts: ContextBuilder

    async def propose(self, request: ProposalRequest, arm: Arm) -> ProposalResult:
        ...


def code_block_stop(fmt: str, local: bool, language: Language) -> tuple[str, ...]:
    """Remote models stop right after the closing fence of a code-block reply instead of adding
    prose that costs tokens; local models are held to the format by a grammar instead."""
    code_block = format_named(fmt, language).code_block
    return (CODE_BLOCK_STOP,) if code_block and not local else ()


class Proposer:
    def __init__(self, task: Task, config: RunConfig, gateway: LLMGateway, recorder: Recorder,
                 filters: Sequence[ChildFilter] = (),
                 on_reply_refused: Callable[[dict[str, Any]], None] = lambda tags: None) -> None:
        """``on_reply_refused(tags)`` hears of every reply that could not be used, right after
        it was stored."""
        self.task = task
        self.config = config
        self.gateway = gateway
        self.recorder = recorder
        self.step_entry = InitialEntry(recorder.store, task.language)  # found once, not per reply
        self.filters = list(filters)
        self.on_reply_refused = on_reply_refused
        self.prompts: ContextBuilder = make_component(
            "context_builder", config.search.context_builder, ContextBuilder, task=task,
            config=config.prompt)

    @property
    def language(self) -> Language:
        return self.task.language

    def _reply_tokens(self, arm: Arm, fmt: str) -> int:
        if arm.model.max_tokens:
            return arm.model.max_tokens
        return format_named(fmt, self.language).reply_tokens(self.config.prompt)

    async def propose(self, request: ProposalRequest, arm: Arm) -> ProposalResult:
        caps = self.gateway.capabilities(arm.model.label)
        blocks, files = reply_shape(request.parent.source)  # files: of a several-file program
        fmt = reply_format(arm.model, request.kind, self.language, caps.local,
                           tuple(file_language(path, self.language) for path in files))
        reply_tokens = self._reply_tokens(arm, fmt)
        budget = caps.context_window - reply_tokens - self.config.prompt.context_margin_tokens
        result = ProposalResult(ProposalOutcome.REPLY_REFUSED, model=arm.model.label)
        try:
            messages = self.prompts.build(
                kind=request.kind, fmt=fmt, parent=request.parent,
                inspirations=request.inspirations, notes=request.notes, preamble=request.preamble,
                intent=request.tags.get("intent"), strategy=request.tags.get(STRATEGY_NOTE),
                focus=request.tags.get(FOCUS_NOTE),
                budget_tokens=budget, count_tokens=caps.count_tokens)
        except PromptTooLarge as exc:
            result.outcome = ProposalOutcome.PROMPT_TOO_LARGE
            self._record_failure(request, arm, None, str(exc), result.outcome)
            result.errors.append(str(exc))
            return result
        params = GenerationParams(
            temperature=(arm.temperature if request.temperature is None
                         else request.temperature), max_tokens=reply_tokens,
            stop=code_block_stop(fmt, caps.local, self.language) if not files else (),
            grammar=(grammar_for(fmt, self.language, blocks,
                                 settings=offers_setting_lines(fmt, request.parent.source,
                                                               self.language), files=files)
                     if caps.grammar else None))
        previous_context: int | None = None
        prompt = messages  # as built: a restart goes back to it, without earlier notes
        for attempt in range(self.config.evolution.max_patch_attempts):
            call = await self.gateway.call("mutation", arm.model.label,
                                           LLMRequest(messages=messages, params=params),
                                           parent_context_id=previous_context, in_proposal=True)
            if call.skipped is not None:
                result.errors.append(call.skipped)
                result.outcome = ProposalOutcome.BUDGET
                break
            result.llm_calls += 1
            previous_context = call.context_id
            if call.response is None:
                fatal = call.failure is not None and call.failure.fatal
                result.outcome = ProposalOutcome.FATAL if fatal else ProposalOutcome.CALL_FAILED
                self._record_failure(request, arm, call.context_id, call.error, result.outcome)
                result.errors.append(call.error)
                break  # the provider already retried transient failures
            response = replace(call.response,
                               text=stopped_reply_text(call.response, params.stop))
            made = await child_from_reply(
                self.task, self.recorder.store, request.parent.source, fmt, response,
                new_method_asked=bool(request.tags.get(STRATEGY_NOTE)),
                step_entry=self.step_entry(),
                **(INTENTS.get(request.tags["intent"]).check_options(request.tags)
                   if request.tags.get("intent") else {}),
                max_tokens=params.max_tokens)
            if not isinstance(made, Refusal):
                source, description, notes = made
                return await self._filter_and_record(request, arm, call.context_id,
                                                     source, description, notes, result)
            self._record_failure(request, arm, call.context_id, made.message,
                                 ProposalOutcome.REPLY_REFUSED)
            self.on_reply_refused({**request.tags, "island": request.island})
            result.errors.append(made.message)
            if self._restart_after(made, caps.local):
                messages = self._restart(prompt, made.message,
                                         self._concrete_target(request, made, attempt))
            else:
                messages = self._continue(messages, response, made.message, budget,
                                          caps.count_tokens)
            # Resampling at the same low temperature tends to reproduce the refused reply.
            params = replace(params, temperature=max(params.temperature, RETRY_MIN_TEMPERATURE))
        return result

    async def _filter_and_record(self, request: ProposalRequest, arm: Arm, context_id: int | None,
                                 source: str, description: str, notes: dict[str, Any],
                                 result: ProposalResult) -> ProposalResult:
        child = ProposedChild(source, description, request.parent.id, request.parent.source,
                              request.parent.correct, request.island, request.kind)
        passed: list[tuple[ChildFilter, FilterVerdict]] = []
        for child_filter in self.filters:
            verdict = await child_filter.check_child(
                child, enforce=child_filter.name not in request.relaxed_filters)
            notes = {**notes, **verdict.notes}
            if verdict.refused:
                self._record(request, arm, context_id, CandidateStatus.REJECTED, notes,
                             source=source, description=description, error=verdict.reason or "")
                result.outcome, result.refused_by = verdict.outcome, child_filter.name
                result.errors.append(verdict.reason or "")
                return result
            passed.append((child_filter, verdict))
        result.candidate_id = self._record(request, arm, context_id, CandidateStatus.PENDING,
                                           notes, source=source, description=description)
        result.outcome = ProposalOutcome.CHILD
        for child_filter, verdict in passed:
            child_filter.accepted(result.candidate_id, child, verdict)
        return result

    # ------------------------------------------------------------------ retries

    def _continue(self, messages: tuple[Message, ...], response: LLMResponse, error: str,
                  budget: int, count_tokens: Callable[[str], int]) -> tuple[Message, ...]:
        retry = self.prompts.retry_message(error, response.truncated)
        extended = messages + (Message("assistant", response.text), retry)
        if sum(count_tokens(m.content) + 8 for m in extended) <= budget:
            return extended
        # The conversation no longer fits: start over, carrying only the error forward.
        return messages[:-1] + (Message("user", messages[-1].content + "\n\n" + retry.content),)

    def _restart_after(self, refusal: Refusal, local: bool) -> bool:
        """Whether the next attempt starts from the original prompt instead of continuing the
        conversation: always after a reply that repeats a program (shown its own reply, a model
        sends it again), and for local models unless configured otherwise."""
        if refusal.kind.repeats_code:
            return True
        style = self.config.prompt.retry_style
        return style == "restart" or (style == "auto" and local)

    def _concrete_target(self, request: ProposalRequest, refusal: Refusal, attempt: int) -> str:
        """After a reply that changed nothing or repeated an earlier program: one line of the
        parent holding a setting, a different one each attempt, as a concrete place to start
        (a 1.5B model told only "change something" tends to send the same code again)."""
        if not refusal.kind.repeats_code:
            return ""
        lines = tuning_target_lines(request.parent.source, self.language)
        if not lines:
            return ""
        return lines[(request.generation + attempt) % len(lines)]

    def _restart(self, messages: tuple[Message, ...], error: str,
                 target_line: str = "") -> tuple[Message, ...]:
        """The original prompt again, with the refusal of the previous reply noted at its end."""
        original = messages[:2]
        note = (f"\n\nYour previous reply to this request was refused: {error.strip().rstrip('.')}. "
                "Avoid that mistake this time.")
        if target_line:
            note += f" For example, change the values on this line: `{target_line}`"
        return original[:-1] + (Message("user", original[-1].content + note),)

    # ------------------------------------------------------------------ records

    def _record_failure(self, request: ProposalRequest, arm: Arm, context_id: int | None,
                        error: str, outcome: ProposalOutcome) -> None:
        """A proposal attempt that left no child, with its outcome in the notes (what
        ``cambrian status`` and the UI count failures by); ``reply_refused`` marks the
        model having answered with a reply that could not be used."""
        notes: dict[str, Any] = {"outcome": outcome.value}
        if outcome is ProposalOutcome.REPLY_REFUSED:
            notes["reply_refused"] = True
        self._record(request, arm, context_id, CandidateStatus.PATCH_FAILED, notes, error=error)

    def _record(self, request: ProposalRequest, arm: Arm, context_id: int | None,
                status: CandidateStatus, notes: dict[str, Any], *, source: str | None = None,
                description: str = "", error: str = "") -> int:
        pending = status is CandidateStatus.PENDING
        return self.recorder.add_candidate(
            NewCandidate(
                generation=request.generation, island=request.island, parent_id=request.parent.id,
                operator=request.kind, status=status, language=self.language.name, source=source,
                description=description, model=arm.model.label, context_id=context_id,
                error=error, notes={**request.tags, **notes, "arm": arm.key,
                                    "temperature": (arm.temperature if request.temperature is None
                                                    else request.temperature)}),
            parents=(request.parent.id,) if pending else (),
            inspirations=tuple(i.id for i in request.inspirations) if pending else (),
            arm=arm.key)


register_component("generator", "default", Proposer,
                   "one conversation per proposal: prompt, reply, patch, checks, Reflexion retries")
