"""Turn a sampled parent into a child program with an LLM.

One call to :meth:`Proposer.propose` is one conversation: the model replies, the reply is parsed
and applied; when that fails, the precise error goes back to the model (Reflexion, seed 000 §3.2)
for up to ``max_patch_attempts`` turns. Every call and every failed attempt is stored, so a run's
trace shows what the model saw and why a reply was refused.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from collections.abc import Callable
from typing import Any

from cambrian.components import make_component, register_component
from cambrian.config import ModelConfig, RunConfig
from cambrian.llm.base import (
    ContextOverflow,
    GenerationParams,
    LLMBadRequest,
    LLMError,
    LLMRequest,
    LLMResponse,
    Message,
)
from cambrian.llm.ensemble import Arm, Ensemble
from cambrian.mutate.dead_code import behaviour_unchanged
from cambrian.mutate.definitions import supports_functions
from cambrian.mutate.grammars import grammar_for
from cambrian.mutate.patches import PatchError, apply_reply
from cambrian.mutate.prompts import ProgramView, PromptBuilder, PromptTooLarge, evolve_block_count
from cambrian.mutate.reply_text import CODE_BLOCK_STOP, stopped_reply_text
from cambrian.mutate.setting_lines import offers_setting_lines
from cambrian.mutate.required_names import missing_required_definitions, restore_definitions
from cambrian.mutate.syntax import check_syntax
from cambrian.mutate.tuning_targets import tuning_target_lines
from cambrian.search.novelty import NoveltyFilter
from cambrian.search.recycling import DeletionFilter, RecyclingVerdict
from cambrian.store.store import Store
from cambrian.task.blocks import BlockError, check_immutable_unchanged
from cambrian.task.folder import Task
from cambrian.task.languages import Language

UNKNOWN_CONTEXT_WINDOW = 32_768


@dataclass(frozen=True)
class ProposalRequest:
    generation: int
    island: int
    kind: str  # diff | full | cross | fix
    parent: ProgramView
    inspirations: tuple[ProgramView, ...] = ()
    notes: tuple[str, ...] = ()
    check_novelty: bool = True  # False once a generation has used up its novelty rejections
    check_recycling: bool = True  # False once it has used up its deletion-filter rejections
    # Stored in the notes of whatever candidate row this proposal produces (which guidance,
    # system prompt, mutation intent... it was given), so the trace can tell.
    tags: dict[str, Any] = field(default_factory=dict)
    preamble: str | None = None  # a co-evolved system prompt replacing the default role text


@dataclass
class ProposalOutcome:
    candidate_id: int | None  # the pending child, or None when every attempt failed
    llm_calls: int = 0
    errors: list[str] = field(default_factory=list)
    model: str | None = None
    fatal: str | None = None  # an error no retry can fix (bad credentials, malformed request)
    budget_exhausted: bool = False
    rejected: bool = False  # a valid program, refused as too similar to an existing one
    recycled: bool = False  # ...or refused for re-adding what its lineage deleted


RETRY_MIN_TEMPERATURE = 0.7
DUPLICATE_PREFIX = "this exact program was already proposed"
# Errors that mean the reply gave back the parent's own code.
NO_CHANGE_ERRORS = ("identical to the current program", "does not change the program",
                    "identical to the SEARCH lines", "would behave exactly as before")


def _repeats_code(error: str) -> bool:
    """Whether a refusal says the reply gave back the parent's code or an earlier program."""
    return error.startswith(DUPLICATE_PREFIX) or any(text in error for text in NO_CHANGE_ERRORS)


def reply_format(model: ModelConfig, kind: str, language: Language) -> str:
    """The patch format to ask ``model`` for, for one mutation kind.

    Rewrites (full, cross, fix) always return the whole block. Focused edits use SEARCH/REPLACE,
    except that small local models get whole-function replacement where the language allows it:
    they copy SEARCH lines inexactly far more often than they rewrite a function correctly.
    """
    if kind in ("full", "cross", "fix"):
        return "full"
    if model.patch_format != "auto":
        return model.patch_format
    if model.provider == "local" and supports_functions(language):
        return "function"
    return "diff"


def code_block_stop(fmt: str, model: ModelConfig) -> tuple[str, ...]:
    """Remote models stop right after the closing fence of a code-block reply instead of adding
    prose that costs tokens; local models are held to the format by a grammar instead."""
    return (CODE_BLOCK_STOP,) if fmt in ("full", "function") and model.provider != "local" else ()


class Proposer:
    def __init__(
        self,
        task: Task,
        config: RunConfig,
        store: Store,
        ensemble: Ensemble,
        budget_check: Callable[[], str | None] = lambda: None,
        novelty: NoveltyFilter | None = None,
        deletion_filter: DeletionFilter | None = None,
        on_reply_refused: Callable[[dict[str, Any]], None] = lambda tags: None,
    ) -> None:
        """``budget_check`` is asked before every LLM call; a reason string stops the proposal.
        ``on_reply_refused(tags)`` hears of every reply that could not be used, right after it
        was stored."""
        self.budget_check = budget_check
        self.on_reply_refused = on_reply_refused
        self.novelty = novelty
        self.deletion_filter = deletion_filter
        self.task = task
        self.config = config
        self.store = store
        self.ensemble = ensemble
        self.prompts: PromptBuilder = make_component(
            "context_builder", config.search.context_builder, task=task, config=config.prompt)

    def _reply_tokens(self, arm: Arm, fmt: str) -> int:
        if arm.model.max_tokens:
            return arm.model.max_tokens
        return self.config.prompt.reply_tokens_diff if fmt == "diff" else self.config.prompt.reply_tokens_full

    async def propose(self, request: ProposalRequest, arm: Arm) -> ProposalOutcome:
        provider = self.ensemble.provider(arm)
        fmt = reply_format(arm.model, request.kind, self.task.language)
        reply_tokens = self._reply_tokens(arm, fmt)
        window = provider.context_window or UNKNOWN_CONTEXT_WINDOW
        budget = window - reply_tokens - self.config.prompt.context_margin_tokens
        outcome = ProposalOutcome(candidate_id=None, model=arm.model.label)
        try:
            messages = self.prompts.build(
                kind=request.kind, fmt=fmt, parent=request.parent,
                inspirations=request.inspirations, notes=request.notes, preamble=request.preamble,
                intent=request.tags.get("intent"),
                budget_tokens=budget, count_tokens=provider.count_tokens,
            )
        except PromptTooLarge as exc:
            self._record_failure(request, arm, None, str(exc))
            outcome.errors.append(str(exc))
            return outcome

        params = GenerationParams(
            temperature=arm.temperature,
            max_tokens=reply_tokens,
            stop=code_block_stop(fmt, arm.model),
            grammar=(grammar_for(fmt, self.task.language.name,
                                 evolve_block_count(request.parent.source),
                                 settings=offers_setting_lines(fmt, request.parent.source,
                                                               self.task.language))
                     if arm.model.provider == "local" else None),
        )
        previous_context: int | None = None
        prompt = messages  # as built: a restart goes back to it, without earlier notes
        for attempt in range(self.config.evolution.max_patch_attempts):
            stop = self.budget_check()
            if stop is not None:
                outcome.errors.append(stop)
                outcome.budget_exhausted = True
                break
            llm_request = LLMRequest(messages=messages, params=params)
            response, context_id, error, fatal = await self._call(
                provider, arm, llm_request, previous_context
            )
            outcome.llm_calls += 1
            previous_context = context_id
            if response is None:
                self._record_failure(request, arm, context_id, error)
                outcome.errors.append(error)
                outcome.fatal = f"model '{arm.model.label}': {error}" if fatal else None
                break  # the provider already retried transient failures
            response = replace(response, text=stopped_reply_text(response, params.stop))
            child, error, notes = await self._apply(request.parent.source, fmt, response)
            if child is not None:
                return await self._accept_or_reject(request, arm, context_id, child, notes, outcome)
            self._record_failure(request, arm, context_id, error, reply_refused=True)
            self.on_reply_refused(request.tags)
            outcome.errors.append(error)
            if self._restart_after(error, arm.model):
                messages = self._restart(prompt, error, self._concrete_target(
                    request, error, attempt))
            else:
                messages = self._continue(messages, response, error, budget, provider.count_tokens)
            # Resampling at the same low temperature tends to reproduce the refused reply.
            params = replace(params, temperature=max(params.temperature, RETRY_MIN_TEMPERATURE))
        return outcome

    async def _accept_or_reject(
        self,
        request: ProposalRequest,
        arm: Arm,
        context_id: int,
        child: tuple[str, str],
        notes: dict[str, Any],
        outcome: ProposalOutcome,
    ) -> ProposalOutcome:
        recycling = self._check_recycling(request, child[0])
        if recycling is not None:
            notes = {**notes, **recycling.notes()}
            if recycling.action == "reject":
                self._record_recycled(request, arm, context_id, child, notes, recycling.reason)
                outcome.rejected = outcome.recycled = True
                outcome.errors.append(recycling.reason)
                return outcome
        if self.novelty is None:
            outcome.candidate_id = self._record_child(request, arm, context_id, child, notes)
            return outcome
        verdict = await self.novelty.check(child[0], request.island,
                                           use_judge=request.check_novelty)
        notes = {**notes, "similarity": verdict.similarity, "nearest": verdict.nearest_id}
        if not verdict.novel and request.check_novelty:
            self.store.add_candidate(
                generation=request.generation, island=request.island, parent_id=request.parent.id,
                operator=request.kind, status="rejected", language=self.task.language.name,
                source=child[0], description=child[1], model=arm.model.label,
                context_id=context_id, error=verdict.reason,
                notes={**request.tags, **notes, "temperature": arm.temperature, "arm": arm.key,
                       "judge_context": verdict.judge_context_id},
            )
            outcome.rejected = True
            outcome.errors.append(verdict.reason)
            return outcome
        outcome.candidate_id = self._record_child(request, arm, context_id, child, notes)
        self.novelty.remember(outcome.candidate_id, request.island, verdict.vector)
        return outcome

    def _check_recycling(self, request: ProposalRequest, source: str) -> RecyclingVerdict | None:
        """The deletion filter's verdict on a child (``trace_feedback.deletion_filter``); None
        when it is off, used up for this generation, or the parent fails (re-adding what a
        breaking edit removed is a legitimate repair)."""
        if (self.deletion_filter is None or not request.check_recycling
                or request.kind == "fix" or not request.parent.correct):
            return None
        return self.deletion_filter.check(request.parent.id, request.parent.source, source)

    def _record_recycled(self, request: ProposalRequest, arm: Arm, context_id: int,
                         child: tuple[str, str], notes: dict[str, Any], reason: str) -> None:
        self.store.add_candidate(
            generation=request.generation, island=request.island, parent_id=request.parent.id,
            operator=request.kind, status="rejected", language=self.task.language.name,
            source=child[0], description=child[1], model=arm.model.label,
            context_id=context_id, error=reason,
            notes={**request.tags, **notes, "temperature": arm.temperature, "arm": arm.key},
        )

    # ------------------------------------------------------------------ steps

    async def _call(
        self, provider: Any, arm: Arm, request: LLMRequest, previous_context: int | None
    ) -> tuple[LLMResponse | None, int, str, bool]:
        """(response, context id, error, fatal): fatal errors cannot be fixed by retrying."""
        try:
            response = await provider.complete(request)
        except LLMError as exc:
            error = f"{type(exc).__name__}: {exc}"
            context_id = self.store.add_context(
                purpose="mutation", model=arm.model.label, provider=arm.model.provider,
                request=request, response=None, error=error, parent_context_id=previous_context,
            )
            fatal = isinstance(exc, LLMBadRequest) and not isinstance(exc, ContextOverflow)
            return None, context_id, error, fatal
        context_id = self.store.add_context(
            purpose="mutation", model=arm.model.label, provider=arm.model.provider,
            request=request, response=response, parent_context_id=previous_context,
        )
        return response, context_id, "", False

    async def _apply(
        self, parent_source: str, fmt: str, response: LLMResponse
    ) -> tuple[tuple[str, str] | None, str, dict[str, Any]]:
        """Return ((source, description), "", notes) or (None, error, {})."""
        try:
            patch = apply_reply(fmt, parent_source, response.text, self.task.language.name)
            check_immutable_unchanged(parent_source, patch.source)
        except (PatchError, BlockError) as exc:
            message = str(exc)
            if response.truncated:
                message = f"reply hit the {response.usage.completion_tokens}-token limit; {message}"
            return None, message, {}
        notes = {"format": fmt, "edits": patch.n_edits, "apply_notes": list(patch.notes)}
        if response.truncated:  # cut at the token limit, yet complete enough to apply
            notes["truncated_reply"] = True
        source = patch.source
        if fmt == "full" and self.task.language.name == "python":
            missing = missing_required_definitions(parent_source, source)
            if missing:
                source = restore_definitions(parent_source, source, missing)
                notes["restored_definitions"] = missing
        if source.strip() == parent_source.strip():
            return None, "the reply does not change the program", {}
        if self.task.language.name == "python":
            unchanged = behaviour_unchanged(parent_source, source)
            if unchanged:
                return None, unchanged, {}
        earlier = self.store.find_by_source(source)
        if earlier is not None:
            # What that program was, so the next attempt knows which change to avoid.
            tried = f': "{earlier.description[:100]}"' if earlier.description else ""
            outcome = (f", score {earlier.score:.6g}" if earlier.score is not None
                       else f", {earlier.status}")
            return None, (f"{DUPLICATE_PREFIX} (program {earlier.id}{tried}{outcome}); "
                          "propose a different change"), {}
        syntax_error = await asyncio.to_thread(check_syntax, source, self.task.language.name)
        if syntax_error:
            return None, f"syntax error: {syntax_error}", {}
        return (source, patch.description), "", notes

    def _continue(
        self,
        messages: tuple[Message, ...],
        response: LLMResponse,
        error: str,
        budget: int,
        count_tokens: Any,
    ) -> tuple[Message, ...]:
        retry = self.prompts.retry_message(error, response.truncated)
        extended = messages + (Message("assistant", response.text), retry)
        if sum(count_tokens(m.content) + 8 for m in extended) <= budget:
            return extended
        # The conversation no longer fits: start over, carrying only the error forward.
        return messages[:-1] + (Message("user", messages[-1].content + "\n\n" + retry.content),)

    def _restart_after(self, error: str, model: ModelConfig) -> bool:
        """Whether the next attempt starts from the original prompt instead of continuing the
        conversation: always after a reply that repeats a program (shown its own reply, a model
        sends it again), and for local models unless configured otherwise."""
        if _repeats_code(error):
            return True
        style = self.config.prompt.retry_style
        return style == "restart" or (style == "auto" and model.provider == "local")

    def _concrete_target(self, request: ProposalRequest, error: str, attempt: int) -> str:
        """After a reply that changed nothing or repeated an earlier program: one line of the
        parent holding a setting, a different one each attempt, as a concrete place to start
        (a 1.5B model told only "change something" tends to send the same code again)."""
        if not _repeats_code(error):
            return ""
        lines = tuning_target_lines(request.parent.source, self.task.language)
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
                        error: str, reply_refused: bool = False) -> None:
        """``reply_refused``: the model answered, but its reply could not be used (as opposed
        to a call that failed or a prompt that did not fit)."""
        notes = {**request.tags, "temperature": arm.temperature, "arm": arm.key}
        if reply_refused:
            notes["reply_refused"] = True
        self.store.add_candidate(
            generation=request.generation, island=request.island, parent_id=request.parent.id,
            operator=request.kind, status="patch_failed", language=self.task.language.name,
            model=arm.model.label, context_id=context_id, error=error, notes=notes,
        )

    def _record_child(
        self,
        request: ProposalRequest,
        arm: Arm,
        context_id: int,
        child: tuple[str, str],
        notes: dict[str, Any],
    ) -> int:
        source, description = child
        notes = {**request.tags, **notes, "temperature": arm.temperature, "arm": arm.key}
        with self.store.transaction():
            candidate_id = self.store.add_candidate(
                generation=request.generation, island=request.island, parent_id=request.parent.id,
                operator=request.kind, status="pending", language=self.task.language.name,
                source=source, description=description, model=arm.model.label,
                context_id=context_id, notes=notes,
            )
            self.store.add_edge(request.parent.id, candidate_id, "parent", request.kind)
            for inspiration in request.inspirations:
                self.store.add_edge(inspiration.id, candidate_id, "inspiration", request.kind)
        return candidate_id


register_component("generator", "default", Proposer,
                   "one conversation per proposal: prompt, reply, patch, checks, Reflexion retries")
