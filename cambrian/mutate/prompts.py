"""Mutation prompts, built to fit the model's context window.

Layout: the system message holds only what never changes during a run (role, task, problem
statement, the problem brief written before the first proposal), so local servers reuse its KV
cache across calls. The user message holds the parent, its feedback, inspirations and notes, and
ends with the instructions and reply format, where a small model attends most. When the budget
is tight, optional sections are shrunk and then dropped in priority order; the call is never
allowed to overflow the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from cambrian.config import PromptConfig
from cambrian.core.components import register_component
from cambrian.llm.base import Message
from cambrian.mutate import text_artifacts
from cambrian.mutate.failed_examples import MAX_SHOWN_CASES, cases_section, reflection_instruction
from cambrian.mutate.file_prompts import has_fixed_files, program_listing
from cambrian.mutate.file_replies import reply_shape
from cambrian.mutate.focus import focused_instruction
from cambrian.mutate.grammars import format_instructions
from cambrian.mutate.intents import INTENTS
from cambrian.mutate.kept_notes import note_levels
from cambrian.mutate.setting_lines import offers_setting_lines
from cambrian.mutate.strategies import StrategyChoice
from cambrian.task.blocks import BlockError, parse_regions
from cambrian.task.folder import Task

TokenCounter = Callable[[str], int]


class PromptTooLarge(ValueError):
    """Even the required parts of the prompt do not fit the model's window."""


@dataclass(frozen=True)
class ProgramView:
    """A program as a prompt shows it (never includes private metrics)."""

    id: int
    source: str
    score: float | None
    correct: bool
    public: dict[str, Any] = field(default_factory=dict)
    text_feedback: str = ""
    error: str = ""
    # Per-example results its evaluator reported (evaluate/case_feedback.py): the failed ones
    # are shown for the model to reflect on (failed_examples.py).
    cases: tuple[dict[str, Any], ...] = ()


@runtime_checkable
class ContextBuilder(Protocol):
    """What the loop needs of a context builder (``search.context_builder``; this module's
    ``PromptBuilder`` is the default, and subclassing it the easy way to write another)."""

    brief: str | None  # the problem brief, set once before the first proposal

    def default_preamble(self) -> str:
        """The role text a co-evolved system prompt starts from."""
        ...

    def build(self, *, kind: str, fmt: str, parent: ProgramView,
              inspirations: Sequence[ProgramView] = (), notes: Sequence[str] = (),
              budget_tokens: int, count_tokens: TokenCounter, preamble: str | None = None,
              intent: str | None = None, strategy: str | None = None,
              focus: str | None = None) -> tuple[Message, ...]:
        """The messages of one mutation prompt."""
        ...


# The task text per patch kind, when no mutation intent (cambrian/mutate/intents.py) is given.
TASK_INTENT = {
    "diff": "Make one focused change that improves the score.",
    "full": "Rewrite the code inside the EVOLVE-BLOCK with a better approach.",
    "cross": "Combine the strongest ideas of the current program and the other program shown "
    "into one better program.",
    "fix": "The current program fails. Fix it so that it runs correctly.",
}


def _fmt_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    text = str(value)
    return text if len(text) <= 200 else text[:200] + "…"


def truncate_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its head and its tail."""
    text = text.strip()
    if len(text) <= limit:
        return text
    if limit <= 0:  # text[-0:] below would keep all of it
        return ""
    head = limit * 2 // 3
    return text[:head] + "\n[… truncated …]\n" + text[-(limit - head):]


def evolve_block_count(source: str) -> int:
    """How many EVOLVE-BLOCKs ``source`` has (0 without markers or with broken ones)."""
    try:
        regions = parse_regions(source)
    except BlockError:
        return 0
    return len(regions.blocks) if regions.has_markers else 0


class PromptBuilder:
    def __init__(self, task: Task, config: PromptConfig) -> None:
        self.task = task
        self.config = config
        self.fence = task.language.fence_tags[0] if task.language.fence_tags else ""
        self.better = "higher" if task.direction == "maximize" else "lower"
        # The problem brief (cambrian/meta/comprehension.py); set once, before the first proposal.
        self.brief: str | None = None

    # ------------------------------------------------------------------ fixed part

    def default_preamble(self) -> str:
        if self.task.language.text:
            return text_artifacts.preamble(self.task.language.name, self.better)
        return (f"You are an expert {self.task.language.name} programmer. You improve a program "
                f"step by step; each version is run and scored ({self.better} score is better).")

    def system_message(
        self,
        problem_chars: int | None = None,
        preamble: str | None = None,
        brief_chars: int | None = None,
    ) -> str:
        """``preamble``: the role paragraph, when a co-evolved system prompt replaces the default;
        ``problem_chars``/``brief_chars``: shrink the statement / the brief to fit (0 drops it)."""
        parts = [preamble.strip() if preamble else self.default_preamble()]
        if self.task.description:
            parts.append("## Task\n" + self.task.description.strip())
        if self.task.problem_statement:
            statement = self.task.problem_statement
            if problem_chars is not None:
                statement = truncate_middle(statement, problem_chars)
            if statement.strip():
                parts.append("## Problem statement\n" + statement.strip())
        if self.brief:
            brief = self.brief if brief_chars is None else truncate_middle(self.brief, brief_chars)
            if brief:
                parts.append("## Problem brief (an analysis of the statement)\n" + brief)
        if not self.task.language.text:
            parts.append(
                "Only the code between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END markers may "
                "change; everything else is fixed."
            )
        elif evolve_block_count(self.task.initial_source or ""):
            parts.append(text_artifacts.blocks_sentence())
        return "\n\n".join(parts)

    # ------------------------------------------------------------------ sections

    def _code(self, source: str) -> str:
        return f"```{self.fence}\n{source.rstrip()}\n```"

    def _metrics(self, program: ProgramView, feedback_chars: int) -> str:
        lines = []
        if program.correct and program.score is not None:
            lines.append(f"Score: {program.score:.6g} ({self.better} is better)")
        elif not program.correct:
            lines.append("Status: FAILED")
        for key, value in sorted(program.public.items()):
            lines.append(f"- {key}: {_fmt_value(value)}")
        if program.error:
            lines.append("Error:\n" + truncate_middle(program.error, feedback_chars))
        if self.config.show_text_feedback and program.text_feedback and feedback_chars > 0:
            lines.append("Feedback:\n" + truncate_middle(program.text_feedback, feedback_chars))
        return "\n".join(lines)

    def _inspiration(self, program: ProgramView, blocks_only: bool) -> str:
        noun = self.task.language.noun.capitalize()
        title = f"### {noun} {program.id} (score {program.score:.6g})" if program.score is not None \
            else f"### {noun} {program.id}"
        listing = program_listing(program.source, self.task.language, blocks_only=blocks_only)
        return f"{title}\n{listing}"

    # ------------------------------------------------------------------ assembly

    def build(
        self,
        *,
        kind: str,
        fmt: str,
        parent: ProgramView,
        inspirations: Sequence[ProgramView] = (),
        notes: Sequence[str] = (),
        budget_tokens: int,
        count_tokens: TokenCounter,
        preamble: str | None = None,
        intent: str | None = None,
        strategy: str | None = None,
        focus: str | None = None,
    ) -> tuple[Message, ...]:
        """Messages for one mutation of ``parent``; ``kind`` is diff, full, cross or fix,
        ``intent`` (tuning, strategy...) when the mutation schedule chose one, and ``strategy``
        the concrete method a strategy proposal builds in (cambrian/mutate/strategies.py), and
        ``focus`` the function a focused edit works on (cambrian/mutate/focus.py)."""
        if intent:
            task_text = INTENTS.get(intent).task_text(
                parent.source, self.task.language, given_score=self.task.step_score,
                strategy=strategy, focus=focus)
        else:
            task_text = StrategyChoice(strategy).instruction if strategy else TASK_INTENT[kind]
            task_text = focused_instruction(task_text, focus) if focus else task_text
        noun = self.task.language.noun
        if self.task.language.text:
            task_text = text_artifacts.task_text(intent, kind, strategy) or task_text
        blocks, files = reply_shape(parent.source)  # files: those a reply to several may name
        settings = offers_setting_lines(fmt, parent.source, self.task.language)
        reply_format = format_instructions(fmt, self.task.language.name, blocks, settings, files)
        instructions = f"## Your task\n{task_text}\n\n{reply_format}"
        reflective = f"## Your task\n{task_text}\n{reflection_instruction(noun)}\n\n{reply_format}"
        current = f"## Current {noun}\n{program_listing(parent.source, self.task.language)}"
        cases = parent.cases if self.config.show_text_feedback else ()

        # Variants from richest to leanest; the first that fits wins.
        feedback_levels = [self.config.max_feedback_chars, self.config.max_feedback_chars // 3, 0]
        case_levels = [MAX_SHOWN_CASES, 2, 0]  # failed examples shown, shrinking with feedback
        # (statement chars, brief chars): the statement shrinks first, as the brief condenses it.
        problem_levels: list[tuple[int | None, int | None]] = [
            (None, None), (4000, None), (1500, None), (0, None), (0, 800), (0, 0)]
        insp_levels = [(len(inspirations), False), (len(inspirations), True)] + [
            (n, True) for n in range(len(inspirations) - 1, -1, -1)
        ]
        levels_of_notes = note_levels(notes)  # kept_notes.py: guidance outlives the rest

        def render(problem: tuple[int | None, int | None], feedback: int, n_insp: int,
                   blocks_only: bool, shown_notes: Sequence[str], n_cases: int = 0,
                   summarised: bool = False):
            system = self.system_message(problem[0], preamble, problem[1])
            shown = current if not summarised else f"## Current {noun}\n" + program_listing(
                parent.source, self.task.language, summarise_fixed=True)
            sections = [shown, "## Its evaluation\n" + self._metrics(parent, feedback)]
            failures = cases_section(cases, n_cases)
            if failures:
                sections.append(failures)
            if n_insp:
                label = (f"## The other {noun}" if kind == "cross"
                         else f"## Other {noun}s for inspiration")
                sections.append(label + "\n" + "\n\n".join(
                    self._inspiration(p, blocks_only) for p in inspirations[-n_insp:]
                ))
            if shown_notes:
                sections.append("## Notes from earlier attempts\n" + "\n".join(
                    f"- {n}" for n in shown_notes
                ))
            sections.append(reflective if failures else instructions)
            return (Message("system", system), Message("user", "\n\n".join(sections)))

        for shown_notes in levels_of_notes:
            for n_insp, blocks_only in insp_levels:
                for feedback, n_cases in zip(feedback_levels, case_levels):
                    messages = render(problem_levels[0], feedback, n_insp, blocks_only,
                                      shown_notes, n_cases)
                    if self._fits(messages, budget_tokens, count_tokens):
                        return messages
        # Then the files that cannot change by their signatures, before the statement shrinks.
        lean = ([(p, True) for p in problem_levels] if has_fixed_files(parent.source)
                else [(p, False) for p in problem_levels[1:]])
        for problem, summarised in lean:
            for shown_notes in dict.fromkeys((levels_of_notes[-1], ())):
                messages = render(problem, 0, 0, True, shown_notes, summarised=summarised)
                if self._fits(messages, budget_tokens, count_tokens):
                    return messages
        raise PromptTooLarge(
            f"the program alone needs more than the {budget_tokens} prompt tokens available; "
            "use a model with a larger context window or a smaller evolve block"
        )

    def retry_message(self, error: str, truncated: bool) -> Message:
        """The Reflexion turn after a reply that could not be applied."""
        if truncated:
            hint = "Your reply was cut off because it was too long. Reply again with a SHORTER answer."
        else:
            hint = "Your reply could not be used."
        return Message(
            "user",
            f"{hint}\nProblem: {error.strip()}\nReply again, following the required format exactly.",
        )

    @staticmethod
    def _fits(messages: Sequence[Message], budget: int, count: TokenCounter) -> bool:
        # Chat templates add a few tokens per message on top of the content.
        return sum(count(m.content) + 8 for m in messages) <= budget


register_component("context_builder", "default", PromptBuilder,
                   "fixed system prompt first, then parent, notes and instructions, fitted to "
                   "the context window")
