"""What the strategy tagger (``strategy_tagger.py``) asks and how it reads the answer.

The reply is one line, ``FAMILY: <family> | IDEA: <key idea>``. Two prompt styles:

- a model that takes no grammar (a remote one) is shown the vocabulary's families and asked to
  pick one, or to name a new one when none fits; a new name is confirmed in a second turn;
- a model held to the reply by a grammar (the embedded local one, a small model) is shown a few
  worked examples instead, and no list: the 0.5B model answers with whichever family is listed
  first, whatever the program does, while worked examples let it name the method; its free-text
  family is then normalised to the vocabulary (``strategy_vocabulary.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cambrian.llm.base import Message
from cambrian.task.blocks import BlockError, block_contents

TAG_QUESTION = "Classify the algorithmic strategy of this program."
CONFIRM_QUESTION = "is not one of the known strategy families"
MAX_FAMILY_CHARS = 60
MAX_IDEA_CHARS = 160
TAG_GRAMMAR = "\n".join([
    'root ::= "FAMILY: " family " | IDEA: " idea "\\n"?',
    'family ::= [a-z] [a-z0-9 -]{1,30}',
    'idea ::= [a-zA-Z0-9] [^\\n|]{2,120}',
])
_FAMILY = re.compile(r"family[*_\s]*[:=][*_\s]*([^|\n;]*)", re.IGNORECASE)
_IDEA = re.compile(r"(?:key\s*)?idea[*_\s]*[:=][*_\s]*([^\n]*)", re.IGNORECASE)
_REPLY_LINE = "IDEA: <the program's key idea in at most 12 words>"

# Worked examples for a small model: (code, reply), one per common family.
EXAMPLES: tuple[tuple[str, str], ...] = (
    ("def pack(items, cap):\n    items.sort(key=lambda i: i.value / i.weight, reverse=True)\n"
     "    chosen = []\n    for item in items:\n        if item.weight <= cap:\n"
     "            chosen.append(item)\n            cap -= item.weight\n    return chosen",
     "FAMILY: greedy | IDEA: take items by value per weight while they fit"),
    ("def fewest(coins, total):\n    best = [0] + [10**9] * total\n"
     "    for t in range(1, total + 1):\n        for c in coins:\n            if c <= t:\n"
     "                best[t] = min(best[t], best[t - c] + 1)\n    return best[total]",
     "FAMILY: dynamic programming | IDEA: fewest coins for every smaller total first"),
    ("def minimise(f, x, steps=1000):\n    t = 1.0\n    for _ in range(steps):\n"
     "        y = x + random.gauss(0, 0.1)\n"
     "        if f(y) < f(x) or random.random() < math.exp((f(x) - f(y)) / t):\n"
     "            x = y\n        t *= 0.99\n    return x",
     "FAMILY: simulated annealing | IDEA: accept worse points with a cooling temperature"),
    ("def improve(route, length):\n    better = True\n    while better:\n"
     "        better = False\n        for i, j in pairs(route):\n"
     "            new = swap(route, i, j)\n            if length(new) < length(route):\n"
     "                route, better = new, True\n    return route",
     "FAMILY: local search | IDEA: swap two stops while it shortens the route"),
)


class TagReplyError(ValueError):
    """The reply holds no usable family."""


@dataclass(frozen=True)
class ParsedTag:
    family: str
    key_idea: str


def parse_tag_reply(text: str) -> ParsedTag:
    """``FAMILY: <family> | IDEA: <key idea>`` (case, markdown, separators and a missing idea
    are forgiven); raises :class:`TagReplyError` when no family can be read."""
    family_match = _FAMILY.search(text or "")
    if family_match is None:
        raise TagReplyError(f"no 'FAMILY:' in the reply {text[:80]!r}")
    family = family_match.group(1).strip().strip("*`\"'. ")
    if not family or len(family) > MAX_FAMILY_CHARS:
        raise TagReplyError(f"unusable family {family[:80]!r}")
    idea_match = _IDEA.search(text[family_match.end():])
    idea = idea_match.group(1).strip().strip("*`\"' ") if idea_match else ""
    return ParsedTag(family, idea[:MAX_IDEA_CHARS])


def code_excerpt(source: str, max_lines: int) -> str:
    """What the model reads of a program: its EVOLVE-BLOCKs (the whole file without markers),
    blank lines dropped, cut to ``max_lines`` lines."""
    try:
        text = "\n".join(part.rstrip("\n") for part in block_contents(source))
    except BlockError:
        text = source
    lines = [line for line in text.splitlines() if line.strip()]
    cut = lines[:max_lines]
    if len(lines) > max_lines:
        cut.append(f"... ({len(lines) - max_lines} more lines)")
    return "\n".join(cut)


def _question(excerpt: str, fence: str) -> str:
    return f"{TAG_QUESTION}\n\n```{fence}\n{excerpt}\n```\n\n"


def listed_prompt(excerpt: str, families: list[str], fence: str = "") -> str:
    """The question for a model shown the vocabulary."""
    return (_question(excerpt, fence)
            + f"Known strategy families: {', '.join(families)}.\nReply with exactly one line:\n"
            "FAMILY: <one family from the list, or a new short name if none fits> | "
            + _REPLY_LINE)


def example_prompt(excerpt: str, fence: str = "") -> str:
    """The question for a model shown worked examples."""
    return (_question(excerpt, fence) + "Reply with exactly one line:\n"
            "FAMILY: <its strategy family> | " + _REPLY_LINE)


def tag_messages(excerpt: str, families: list[str], fence: str = "", *,
                 examples: bool = False) -> tuple[Message, ...]:
    """The conversation asking for one program's tag (see the module's docstring)."""
    if not examples:
        return (Message("user", listed_prompt(excerpt, families, fence)),)
    shots: list[Message] = []
    for code, reply in EXAMPLES:
        shots += [Message("user", example_prompt(code, "python")), Message("assistant", reply)]
    return (*shots, Message("user", example_prompt(excerpt, fence)))


def confirm_prompt(name: str, families: list[str]) -> str:
    return (f"'{name}' {CONFIRM_QUESTION}: {', '.join(families)}. If one of them fits, answer "
            f"with it; if none does, repeat '{name}'. Reply with exactly one line in the same "
            "format: FAMILY: <family> | IDEA: <key idea>")
