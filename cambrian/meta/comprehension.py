"""Problem comprehension (seed 004 §4 "Phase 1", §9 Component 1): before the first proposal an
LLM reads the problem statement once and writes a structured brief: a summary, the input/output
format, the scoring, the constraints and candidate approaches ranked by promise. Every mutation
prompt then carries the brief in its system message, which stays fixed for the whole run.

The brief is written once per run. Its outcome (the brief, or why there is none) is stored under
the ``comprehension`` key of the store's ``meta`` table, with the LLM call as a ``comprehension``
context, and the brief is also written to ``RUN_DIR/comprehension.md``. A resumed run reads it
back instead of asking again; a failed attempt is not retried, the run goes on without a brief.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.config import ComprehensionConfig
from cambrian.core.events import ComprehensionWritten
from cambrian.core.hooks import LoopHook
from cambrian.llm.gateway import Capabilities, LLMGateway
from cambrian.mutate.prompts import truncate_middle
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store
from cambrian.task.folder import Task

META_KEY = "comprehension"
BRIEF_FILENAME = "comprehension.md"
PURPOSE = "comprehension"
REQUEST_LINE = "Study the problem statement above and write a brief"
MAX_ITEMS_PER_SECTION = 8
MAX_ITEM_CHARS = 300

# (reply heading, heading in the brief the prompts show)
SECTIONS: tuple[tuple[str, str], ...] = (
    ("SUMMARY", "Summary"),
    ("INPUT AND OUTPUT", "Input and output"),
    ("SCORING", "Scoring"),
    ("CONSTRAINTS", "Constraints"),
    ("APPROACHES", "Candidate approaches, most promising first"),
)
_RANKED = "APPROACHES"

_HEADING = re.compile(
    r"^\s*(?P<hash>#+\s*)?(?:\d+[.)]\s*)?(?P<bold>[*_]{1,2})?\s*"
    r"(?P<name>summary|input(?:\s*(?:and|/|&)\s*output)?(?:\s+formats?)?|scoring(?:\s+function)?"
    r"|(?:key\s+)?constraints|(?:candidate\s+|suggested\s+)?(?:algorithmic\s+)?approaches)"
    r"\s*[*_]*\s*(?P<colon>:)?[*_]*\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_ITEM_PREFIX = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def brief_grammar() -> str:
    """GBNF for a local model: the five headed sections in order, short items under each."""
    return "\n".join([
        'root ::= "SUMMARY:\\n" item{1,3} "INPUT AND OUTPUT:\\n" item{1,5} '
        '"SCORING:\\n" item{1,4} "CONSTRAINTS:\\n" item{1,5} "APPROACHES:\\n" ranked{1,4}',
        f'item ::= "- " [^\\n]{{1,{MAX_ITEM_CHARS - 80}}} "\\n"',
        f'ranked ::= [1-9] ". " [^\\n]{{1,{MAX_ITEM_CHARS - 80}}} "\\n"',
    ])


@dataclass(frozen=True)
class ProblemBrief:
    sections: dict[str, list[str]]  # reply heading -> its items, in SECTIONS order

    def text(self) -> str:
        """The brief as the prompts show it."""
        blocks = []
        for key, title in SECTIONS:
            items = self.sections.get(key, [])
            if key == _RANKED:
                lines = [f"{i}. {item}" for i, item in enumerate(items, 1)]
            else:
                lines = [f"- {item}" for item in items]
            blocks.append(f"{title}:\n" + "\n".join(lines))
        return "\n".join(blocks)


def _section_key(name: str) -> str:
    word = name.strip().lower()
    for key, _ in SECTIONS:
        if key.split()[0].lower() in word:
            return key
    raise AssertionError(f"heading {name!r} matches no section")  # the regex only allows five


def _heading(line: str) -> tuple[str, str] | None:
    """(section key, text after the heading) when ``line`` is a section heading."""
    match = _HEADING.match(line)
    if match is None:
        return None
    rest = match["rest"].strip()
    if not (match["hash"] or match["colon"] or (match["bold"] and not rest)):
        return None  # a sentence that merely starts with "Scoring" or "Input"
    return _section_key(match["name"]), rest


def _placeholder(item: str) -> bool:
    """An item that echoes the request's "(what the problem asks for)" template text."""
    return item.startswith("(") and item.endswith(")") or item.strip("().").lower() in _TEMPLATE_ITEMS


def parse_brief(text: str) -> tuple[ProblemBrief | None, str]:
    """(the brief, "") or (None, what is wrong with the reply). Items that echo the template or
    repeat an earlier item are dropped (a small model often does both); a section left empty
    makes the reply unusable, and the prompts then carry the statement alone."""
    sections: dict[str, list[str]] = {}
    seen: set[str] = set()
    current: str | None = None
    for raw in text.splitlines():
        heading = _heading(raw)
        if heading is not None:
            current, rest = heading
            sections.setdefault(current, [])
            raw = rest
        item = _ITEM_PREFIX.sub("", raw).strip().strip("*_").strip()[:MAX_ITEM_CHARS]
        if current is None or not item or _placeholder(item) or item.lower() in seen:
            continue
        seen.add(item.lower())
        if len(sections[current]) < MAX_ITEMS_PER_SECTION:
            sections[current].append(item)
    missing = [key for key, _ in SECTIONS if not sections.get(key)]
    if missing:
        return None, ("the reply lacks the sections " + ", ".join(f"{key}:" for key in missing)
                      + " (or only repeats lines or the template's placeholders in them)")
    return ProblemBrief({key: sections[key] for key, _ in SECTIONS}), ""


_TEMPLATE_ITEMS = frozenset({
    "what the problem asks for", "what the program reads, and what it must write",
    "how an answer is scored, and what makes it invalid", "sizes, time and memory limits, other rules",
    "the algorithmic approach most likely to score well", "the next most promising one"})


def comprehension_prompt(task: Task, statement: str) -> tuple[str, str]:
    """(system, user) messages asking for the brief."""
    better = "higher" if task.direction == "maximize" else "lower"
    system = ("You read problem statements carefully and condense them for the programmers who "
              "will solve them. You never invent rules that the statement does not give.")
    user = (
        f"## Problem statement\n{statement.strip()}\n\n"
        f"A {task.language.name} program will be written for this problem and improved over many "
        f"versions; each version is run and scored ({better} score is better).\n\n"
        f"{REQUEST_LINE} for those programmers. Reply in exactly this format, one short line "
        "per item:\n"
        "SUMMARY:\n- (what the problem asks for)\n"
        "INPUT AND OUTPUT:\n- (what the program reads, and what it must write)\n"
        "SCORING:\n- (how an answer is scored, and what makes it invalid)\n"
        "CONSTRAINTS:\n- (sizes, time and memory limits, other rules)\n"
        "APPROACHES:\n1. (the algorithmic approach most likely to score well)\n"
        "2. (the next most promising one)\n"
        "Write nothing else."
    )
    return system, user


def _fitting_statement(statement: str, caps: Capabilities, reply_tokens: int,
                       task: Task) -> str | None:
    """The statement, shortened when needed so that the request fits the model's window."""
    budget = caps.context_window - reply_tokens - 64
    for limit in (None, 12_000, 6_000, 3_000):
        text = statement if limit is None else truncate_middle(statement, limit)
        system, user = comprehension_prompt(task, text)
        count = caps.count_tokens
        if count(system) + count(user) + 16 <= budget:
            return text
    return None


def stored_outcome(store: Store) -> dict[str, Any] | None:
    """What an earlier session recorded: {"status": "ok", "brief": ...} or {"status": "failed",
    "error": ...}; None when comprehension has not run in this run yet."""
    raw = store.meta.get(META_KEY)
    return json.loads(raw) if raw else None


def brief_approaches(store: Store) -> list[str]:
    """The approaches the run's brief ranked (none without a brief)."""
    outcome = stored_outcome(store) or {}
    return list(outcome.get("sections", {}).get(_RANKED, [])) if outcome.get("status") == "ok" else []


class ProblemComprehension(LoopHook):
    """A loop hook that acts once per session, before the first proposal: the brief is read
    back or written, then handed to ``on_brief`` (the prompt builder's system message)."""

    name = "comprehension"

    def __init__(
        self,
        config: ComprehensionConfig,
        task: Task,
        gateway: LLMGateway,
        recorder: Recorder,
        model_label: str,
        run_dir: Path,
        budget_check: Callable[[], str | None] = lambda: None,
        on_brief: Callable[[str | None], None] = lambda brief: None,
    ) -> None:
        self.config = config
        self.task = task
        self.gateway = gateway
        self.recorder = recorder
        self.store = recorder.store
        self.model_label = model_label
        self.run_dir = run_dir
        self.budget_check = budget_check
        self.on_brief = on_brief

    async def prepare(self) -> None:
        self.on_brief(prompt_brief(await self.brief(), self.config.max_prompt_chars))

    async def brief(self) -> str | None:
        """The run's brief, as prompts show it: read back from the store, else written now."""
        if not self.config.enabled or not (self.task.problem_statement or "").strip():
            return None
        earlier = stored_outcome(self.store)
        if earlier is not None:
            return earlier.get("brief") if earlier.get("status") == "ok" else None
        if self.budget_check() is not None:
            return None  # not recorded: a resumed run with more budget may still write it
        return await self._write()

    async def _write(self) -> str | None:
        statement = _fitting_statement(self.task.problem_statement or "",
                                       self.gateway.capabilities(self.model_label),
                                       self.config.max_tokens, self.task)
        if statement is None:
            return self._record(None, "the problem statement does not fit the model's context "
                                      "window", None)
        system, user = comprehension_prompt(self.task, statement)
        call = await self.gateway.ask(
            PURPOSE, user, label=self.model_label, system=system,
            max_tokens=self.config.max_tokens, temperature=self.config.temperature,
            grammar=brief_grammar(), budget_check=self.budget_check)
        if call.response is None:
            return self._record(None, f"the LLM call failed: {call.error or 'unknown'}",
                                call.context_id)
        brief, error = parse_brief(call.response.text)
        return self._record(brief, error, call.context_id)

    def _record(self, brief: ProblemBrief | None, error: str, context_id: int | None) -> str | None:
        text = brief.text() if brief is not None else None
        outcome: dict[str, Any] = (
            {"status": "ok", "brief": text, "sections": brief.sections, "context_id": context_id}
            if brief is not None else
            {"status": "failed", "error": error, "context_id": context_id}
        )
        with self.recorder.transaction():
            self.store.meta.set(META_KEY, json.dumps(outcome, sort_keys=True))
            self.recorder.emit(ComprehensionWritten(status=outcome["status"],
                                                    context_id=context_id, error=error))
        if text is not None:
            (self.run_dir / BRIEF_FILENAME).write_text(
                f"# Problem brief: {self.task.name}\n\n{text}\n")
        return text


def prompt_brief(text: str | None, max_chars: int) -> str | None:
    """The brief cut to ``max_chars`` for the mutation prompts (whole items only)."""
    if not text or len(text) <= max_chars:
        return text
    kept: list[str] = []
    for line in text.splitlines():
        if sum(len(k) + 1 for k in kept) + len(line) > max_chars:
            break
        kept.append(line)
    return "\n".join(kept)
