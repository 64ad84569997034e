"""From a model's reply to a child program: apply it in its reply format, keep the code outside
the EVOLVE-BLOCKs, restore definitions a full rewrite dropped, and refuse (with a message meant
for the model) a reply that changes nothing, repeats a program the run has, does not compile
or (Python) uses a name nothing defines."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from cambrian.llm.base import LLMResponse
from cambrian.mutate.file_checks import (
    behaviour_unchanged_files,
    repair_files,
    syntax_error_files,
    undefined_names_files,
)
from cambrian.mutate.patch_types import PatchError, RefusalKind
from cambrian.mutate.patches import apply_reply
from cambrian.mutate.step.wiring import step_contract_error, unwritten_step_error
from cambrian.store.store import Store
from cambrian.task.blocks import BlockError, check_immutable_unchanged
from cambrian.task.folder import Task

DUPLICATE_PREFIX = "this exact program was already proposed"


@dataclass(frozen=True)
class Refusal:
    message: str
    kind: RefusalKind


async def child_from_reply(task: Task, store: Store, parent_source: str, fmt: str,
                           response: LLMResponse, *, new_method_asked: bool = False,
                           step_function: str | None = None, step_entry: str | None = None,
                           max_tokens: int | None = None,
                           ) -> tuple[str, str, dict[str, Any]] | Refusal:
    """(source, description, notes) of the child, or why the reply cannot be used
    (``new_method_asked``: the proposal named a method to implement, which must be called;
    ``step_function``: the improvement-step function an ``improve_step`` proposal asked for,
    which the child must change; ``step_entry``: the run's step entry (``wiring.InitialEntry``),
    where its contract is checked; ``max_tokens``: the reply limit the request asked for, named
    when a cut reply is refused)."""
    language = task.language
    try:
        patch = apply_reply(fmt, parent_source, response.text, language)
        check_immutable_unchanged(parent_source, patch.source)
    except PatchError as exc:
        return _refusal(exc.message, exc.kind, response, max_tokens)
    except BlockError as exc:
        return _refusal(str(exc), RefusalKind.OUTSIDE_BLOCKS, response, max_tokens)
    notes: dict[str, Any] = {"format": fmt, "edits": patch.n_edits,
                             "apply_notes": list(patch.notes)}
    if response.truncated:  # cut at the token limit, yet complete enough to apply
        notes["truncated_reply"] = True
    source = patch.source
    source, repairs = repair_files(parent_source, source, language)  # each changed file
    if repairs:
        notes["repairs"] = repairs
    if source.strip() == parent_source.strip():
        return Refusal("the reply does not change the program", RefusalKind.NO_CHANGE)
    unchanged = (unwritten_step_error(parent_source, source, step_function, language)
                 if step_function else "")
    unchanged = unchanged or behaviour_unchanged_files(parent_source, source, language,
                                                       new_method_asked=new_method_asked)
    if unchanged:
        return Refusal(unchanged, RefusalKind.NO_CHANGE)
    earlier = store.candidates.find_by_source(source)
    if earlier is not None:
        # What that program was, so the next attempt knows which change to avoid.
        tried = f': "{earlier.description[:100]}"' if earlier.description else ""
        outcome = (f", score {earlier.score:.6g}" if earlier.score is not None
                   else f", {earlier.status}")
        return Refusal(f"{DUPLICATE_PREFIX} (program {earlier.id}{tried}{outcome}); "
                       "propose a different change", RefusalKind.DUPLICATE)
    syntax_error = await asyncio.to_thread(syntax_error_files, parent_source, source, language)
    if syntax_error:
        return Refusal(f"syntax error: {syntax_error}", RefusalKind.SYNTAX)
    broken = (undefined_names_files(parent_source, source, language)
              or step_contract_error(source, language, step_entry))
    if broken:
        return Refusal(broken, RefusalKind.SYNTAX)
    return source, patch.description, notes


def _refusal(message: str, kind: RefusalKind, response: LLMResponse,
             max_tokens: int | None) -> Refusal:
    if response.truncated:
        message = f"{truncation(response.usage.completion_tokens, max_tokens)}; {message}"
    return Refusal(message, kind)


def truncation(completion_tokens: int, max_tokens: int | None) -> str:
    """Why a reply stopped at its length, with the limit the request set (the server's count of
    the reply's tokens is not the limit: a server may stop short of it)."""
    if max_tokens is None:
        return f"reply was cut off at its length limit after {completion_tokens} tokens"
    if 0 < completion_tokens < max_tokens:
        return (f"reply was cut off after {completion_tokens} tokens, under the "
                f"{max_tokens}-token limit asked for (the server's own cap or the model's "
                "context window stopped it)")
    return f"reply hit the {max_tokens}-token limit"
