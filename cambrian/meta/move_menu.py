"""Moves derived from the problem: where a task names no moves for its improvement step
(``mutation.improve_moves``), one LLM call before the first proposal reads the problem statement
and the initial program and lists the kinds of small change that fit this solution (what it is
made of, which changes keep it valid). They join the strategy menu's moves, where the draw
weighs each by the gains its children realised (``StrategyMenu``, the intent bandit's factor).

The outcome is stored once per run under the ``moves`` key of the store's ``meta`` table with a
``moves_derived`` event (through the recorder); a resumed run reads it back. A reply without
usable moves leaves the general moves alone on the menu.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from cambrian.core.events import MovesDerived
from cambrian.core.hooks import LoopHook
from cambrian.llm.gateway import LLMGateway
from cambrian.mutate.prompts import truncate_middle
from cambrian.mutate.step.wiring import scaffold
from cambrian.store.recorder import Recorder
from cambrian.task.folder import Task

META_KEY = "moves"
PURPOSE = "moves"
MAX_MOVES = 5
MAX_MOVE_CHARS = 220
_TEMPLATE_WORDS = frozenset({"name", "move", "short", "of", "the", "a"})
_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*\**([A-Z][A-Za-z0-9 '/-]{0,130})\**\s*:\s*(.{8,})$")


def moves_grammar() -> str:
    """GBNF for a local model: three to five lines "- Name: what changes", the name one to
    six words with one space between them (a free run of letters and spaces let the 1.5B
    write "Move   Move   Move   Move"; four words cut "Swap the first and second-to-last"
    into "Swap the first andsecond-to-lt")."""
    return "\n".join([
        'root ::= move{3,5}',
        'move ::= "- " [A-Z] [a-zA-Z-]{0,19} (" " [a-zA-Z-]{1,20}){0,5} ": " [^\\n]{10,200} '
        '"\\n"',
    ])


def moves_prompt(statement: str, program: str, entry: str, solution: tuple[str, ...],
                 fence: str) -> tuple[str, str]:
    """(system, user) asking for the menu of moves."""
    parts = " and ".join(f"`{name}`" for name in solution)
    system = ("You design local-search moves for optimisation programs. You only propose "
              "changes that keep a solution valid under the problem's rules.")
    user = (
        f"## Problem statement\n{statement.strip()}\n\n## Program\n```{fence}\n{program}\n```\n\n"
        f"A hill-climbing loop will improve the solution `{entry}` builds ({parts}) by many "
        "small random changes, keeping a change when the solution scores better. List 3 to 5 "
        "kinds of small change (moves) that fit this solution: what it is made of, which "
        "part a move changes and how the change keeps the solution valid (recompute what "
        "depends on it). Changes that reorder elements only help when the order is what is "
        "scored. Reply in exactly this format, one line per move:\n"
        "- <short name of the move>: <what the move changes, and how the solution stays "
        "valid>\n"
        "Write nothing else."
    )
    return system, user


def parse_moves(text: str) -> list[str]:
    """The moves of a reply, "Name: description" each; lines of another shape are dropped."""
    moves: list[str] = []
    for raw in text.splitlines():
        match = _LINE.match(raw.strip())
        if match is None:
            continue
        name, text = " ".join(match[1].split()), match[2].strip()
        # The 1.5B copied the template's "Name" or "Move" as the name ("Move   Move   Move"):
        # the description alone then.
        template = set(name.lower().split()) <= _TEMPLATE_WORDS
        move = (text if template else f"{name}: {text}")[:MAX_MOVE_CHARS]
        if move.lower() not in {m.lower() for m in moves}:
            moves.append(move)
    return moves[:MAX_MOVES]


class MoveMenu(LoopHook):
    """Once per run, before the first proposal: the derived moves, handed to ``on_moves``."""

    name = "move_menu"

    def __init__(self, task: Task, gateway: LLMGateway, recorder: Recorder, model_label: str,
                 *, initial_source: Callable[[], str | None],
                 budget_check: Callable[[], str | None] = lambda: None,
                 on_moves: Callable[[list[str]], None] = lambda moves: None) -> None:
        self.task = task
        self.gateway = gateway
        self.recorder = recorder
        self.model_label = model_label
        self.initial_source = initial_source
        self.budget_check = budget_check
        self.on_moves = on_moves

    async def prepare(self) -> None:
        moves = await self.moves()
        if moves:
            self.on_moves(moves)

    async def moves(self) -> list[str]:
        stored = self.recorder.store.meta.get(META_KEY)
        if stored:
            return list(json.loads(stored).get("moves", []))
        source = self.initial_source()
        wired = scaffold(source, self.task.language) if source else None
        if wired is None or self.budget_check() is not None:
            return []  # not recorded: nothing to derive moves for (yet)
        statement = truncate_middle(self.task.problem_statement or "", 4000)
        system, user = moves_prompt(statement, truncate_middle(source or "", 6000), wired.entry,
                                    wired.solution, self.task.language.fence_tag)
        call = await self.gateway.ask(
            PURPOSE, user, label=self.model_label, system=system, max_tokens=400,
            temperature=0.3, grammar=moves_grammar(), budget_check=self.budget_check)
        if call.response is None:
            return self._record([], f"the LLM call failed: {call.error or 'unknown'}",
                                call.context_id)
        moves = parse_moves(call.response.text)
        return self._record(moves, "" if moves else "the reply listed no move as "
                                                    "'- Name: description'", call.context_id)

    def _record(self, moves: list[str], error: str, context_id: int | None) -> list[str]:
        with self.recorder.transaction():
            self.recorder.store.meta.set(META_KEY, json.dumps(
                {"moves": moves, "error": error, "context_id": context_id}, sort_keys=True))
            self.recorder.emit(MovesDerived(moves=moves, context_id=context_id, error=error))
        return moves
