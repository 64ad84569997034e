"""The first program of a task that has a problem statement but no initial program.

An LLM writes a complete program with EVOLVE-BLOCK markers around the part later versions should
change. A program without markers gets them added: everything after the leading imports/includes
becomes the block. Each draft must pass the syntax check and then the task's own evaluation
(compilation included); a failed draft's error goes back to the model for the next attempt. Every
call is stored as a ``first_program`` context and every refused draft as an event, so the trace
shows how the run got its starting point.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from cambrian.config import FirstProgramConfig
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.events import FirstProgramFailed
from cambrian.lang.languages import Language
from cambrian.lang.syntax import check_syntax
from cambrian.llm.gateway import LLMGateway
from cambrian.mutate.grammars import grammar_for
from cambrian.mutate.patch_types import PatchError
from cambrian.mutate.prompts import truncate_middle
from cambrian.mutate.reply_text import extract_description, fences_for_language, find_fences
from cambrian.store.recorder import Recorder
from cambrian.task.blocks import (
    END_TOKEN,
    START_TOKEN,
    BlockError,
    line_text,
    parse_regions,
    split_lines,
)
from cambrian.task.folder import Task

PURPOSE = "first_program"
REQUEST_LINE = "Write the first complete program"
MAX_ERROR_CHARS = 2000
MAX_PREVIOUS_CHARS = 12_000
RETRY_MIN_TEMPERATURE = 0.7

# Lines that stay above the evolve block when the model wrote no markers.
_IO_HINTS = {
    "judge": "The program reads one test case from standard input and writes its answer to "
             "standard output.",
    "module": "The evaluator loads the program file as a module and calls what the problem "
              "statement says it calls.",
    "command": "The evaluator runs the program as the problem statement describes.",
}


class DraftError(ValueError):
    """A reply that does not hold a usable program."""


class FirstProgramError(RuntimeError):
    """No usable first program could be written; the message says why."""


@dataclass(frozen=True)
class FirstProgram:
    source: str
    description: str
    result: EvaluationResult  # its evaluation, committed as candidate 1's
    context_id: int | None
    attempts: int
    markers_added: bool


def add_evolve_markers(source: str, language: Language) -> str:
    """``source`` with one EVOLVE-BLOCK around everything after its leading header lines
    (imports, includes, comments); around all of it when the header is all there is."""
    lines = split_lines(source if source.endswith("\n") else source + "\n")
    header = re.compile(language.header_line) if language.header_line else None
    start = 0
    if header is not None:
        while start < len(lines) and header.match(line_text(lines[start])):
            if language.name == "python" and line_text(lines[start]).rstrip().endswith(("(", "\\")):
                break  # an import continued on the next lines stays whole, inside the block
            start += 1
        if start == len(lines):
            start = 0
        while start > 0 and not line_text(lines[start - 1]).strip():
            start -= 1  # blank lines before the body go inside, not above the START marker
    return ("".join(lines[:start]) + language.comment(START_TOKEN) + "\n" + "".join(lines[start:])
            + language.comment(END_TOKEN) + "\n")


def program_from_reply(reply: str, language: Language) -> tuple[str, str, bool]:
    """(source with markers, one-line description, whether the markers were added)."""
    try:
        fences = find_fences(reply)
    except PatchError as exc:
        raise DraftError(str(exc)) from None
    fences = fences_for_language(fences, language)
    if not fences:
        raise DraftError(f"no code block found; reply with the whole program in one "
                         f"```{language.fence_tag} code block")
    code = max(fences, key=lambda fence: len(fence.body)).body
    if not code.strip():
        raise DraftError("the code block is empty")
    try:
        regions = parse_regions(code)
    except BlockError as exc:
        raise DraftError(f"the EVOLVE-BLOCK markers are malformed: {exc}") from None
    if regions.has_markers:
        return code, extract_description(reply), False
    return add_evolve_markers(code, language), extract_description(reply), True


class FirstProgramWriter:
    def __init__(
        self,
        config: FirstProgramConfig,
        task: Task,
        gateway: LLMGateway,
        recorder: Recorder,
        model_label: str,
        budget_check: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.config = config
        self.task = task
        self.gateway = gateway
        self.recorder = recorder
        self.model_label = model_label
        self.budget_check = budget_check
        self.language = task.language

    # ------------------------------------------------------------------ prompt

    def system_message(self, brief: str | None, statement_chars: int | None) -> str:
        better = "higher" if self.task.direction == "maximize" else "lower"
        parts = [f"You are an expert {self.language.name} programmer. You write the first version "
                 "of a program that will then be improved step by step; each version is run and "
                 f"scored ({better} score is better)."]
        if self.task.description:
            parts.append("## Task\n" + self.task.description.strip())
        statement = self.task.problem_statement or ""
        if statement_chars is not None:
            statement = truncate_middle(statement, statement_chars)
        if statement.strip():
            parts.append("## Problem statement\n" + statement.strip())
        if brief:
            parts.append("## Problem brief (an analysis of the statement)\n" + brief)
        return "\n\n".join(parts)

    def request(self) -> str:
        fence = f"```{self.language.fence_tag}"
        return (
            f"{REQUEST_LINE} in {self.language.name} for the problem above. "
            f"{_IO_HINTS.get(self.task.contract, '')}\n"
            "Aim for a simple, correct program that stays well within the limits; later versions "
            "will improve it.\n"
            "Put the part that later versions should change (the algorithm and its parameters) "
            f"between a line `{self.language.comment(START_TOKEN)}` and a line "
            f"`{self.language.comment(END_TOKEN)}`. Keep reading the input, writing the output "
            "and the names the evaluator relies on outside that block.\n"
            f"Reply format: one short line saying what approach you take, then the whole program "
            f"in one {fence} code block. Write nothing else."
        )

    def feedback(self, previous_program: str | None, error: str) -> str:
        """The note appended to the request after a refused draft (``previous_program`` is None
        when the reply held no usable program)."""
        shown = (f"```{self.language.fence_tag}\n"
                 f"{truncate_middle(previous_program, MAX_PREVIOUS_CHARS)}\n```\n"
                 if previous_program is not None else "")
        return (f"\n\n## Your previous attempt\n{shown}"
                f"It could not be used: {truncate_middle(error, MAX_ERROR_CHARS)}\n"
                "Write the whole program again with this fixed, in the same reply format.")

    def _messages(self, brief: str | None, retry_note: str) -> tuple[str, str]:
        """(system, user), the statement shortened until they fit the model's window."""
        caps = self.gateway.capabilities(self.model_label)
        window = caps.context_window
        budget = window - self.config.max_tokens - 64
        user = self.request() + retry_note
        for limit in (None, 6000, 3000, 1500, 0):
            system = self.system_message(brief, limit)
            if caps.count_tokens(system) + caps.count_tokens(user) + 16 <= budget:
                return system, user
        raise FirstProgramError(
            f"the request for a first program does not fit the {window}-token context window of "
            f"model '{self.model_label}' with {self.config.max_tokens} tokens left for "
            "the reply; lower first_program.max_tokens or use a model with a larger window")

    # ------------------------------------------------------------------ the attempts

    async def write(
        self,
        brief: str | None,
        evaluate: Callable[[str, int], Awaitable[EvaluationResult]],
    ) -> FirstProgram:
        """A program that passed ``evaluate(source, attempt)``; raises FirstProgramError."""
        retry_note, last_error = "", ""
        for attempt in range(1, self.config.attempts + 1):
            stop = self.budget_check()
            if stop is not None:
                raise FirstProgramError(f"no first program: the budget ran out ({stop})")
            system, user = self._messages(brief, retry_note)
            # Asking again at a low temperature tends to reproduce the refused program.
            temperature = self.config.temperature if attempt == 1 else max(
                self.config.temperature, RETRY_MIN_TEMPERATURE)
            call = await self.gateway.ask(
                PURPOSE, user, label=self.model_label, system=system,
                max_tokens=self.config.max_tokens, temperature=temperature,
                grammar=grammar_for("full", self.language), budget_check=self.budget_check)
            context_id, reply = call.context_id, call.text
            if reply is None:
                last_error = f"the LLM call failed: {(call.error or 'unknown error')[:MAX_ERROR_CHARS]}"
                self._record_failure(attempt, last_error, context_id)
                continue
            try:
                source, description, added = program_from_reply(reply, self.language)
            except DraftError as exc:
                last_error = str(exc)
                self._record_failure(attempt, last_error, context_id)
                retry_note = self.feedback(None, last_error)
                continue
            syntax_error = await asyncio.to_thread(check_syntax, source, self.language)
            if syntax_error is not None:
                last_error = f"syntax error: {syntax_error}"
            else:
                result = await evaluate(source, attempt)
                if result.correct and result.combined_score is not None:
                    return FirstProgram(source, description, result, context_id, attempt, added)
                last_error = (result.error or result.stderr[-MAX_ERROR_CHARS:]
                              or "the evaluation failed")
            self._record_failure(attempt, last_error, context_id)
            retry_note = self.feedback(source, last_error)
        raise FirstProgramError(
            f"the task has no initial program and {self.config.attempts} attempt(s) to have the "
            f"LLM write one failed; last error: {truncate_middle(last_error, 600)}. Add an initial "
            "program to the task folder, or raise first_program.attempts")

    # ------------------------------------------------------------------ records

    def _record_failure(self, attempt: int, error: str, context_id: int | None) -> None:
        self.recorder.emit(FirstProgramFailed(attempt=attempt, error=error[:4000],
                                              context_id=context_id))
