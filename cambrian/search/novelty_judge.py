"""The LLM novelty judge (seed 000 §3.2): asked only when a proposal's embedding is too close to a
program already on its island, it decides whether the change is meaningful after all.

The prompt is short enough for a 1.5B local model: the unified diff between the mutable code of
the nearest program and the proposal (not both programs in full), cut to a few dozen lines, and a
one-word answer. Local models are grammar-constrained to that word; replies of other models are
parsed leniently (case, markdown, ``NOT_NOVEL``-style answers, "not the same").
"""

from __future__ import annotations

import difflib
import re

from cambrian.task.blocks import block_contents

ANSWER_NOVEL = "DIFFERENT"
ANSWER_SAME = "SAME"
JUDGE_GRAMMAR = f'root ::= "{ANSWER_NOVEL}" | "{ANSWER_SAME}"'
JUDGE_QUESTION = f"Answer with one word: {ANSWER_NOVEL} or {ANSWER_SAME}."
JUDGE_MAX_TOKENS = 16  # one word; room for a remote model's "Answer: DIFFERENT"
MAX_DIFF_LINES = 60
MAX_DIFF_CHARS = 3000

# The first verdict word wins; negated forms are tried first at each position.
_VERDICT = re.compile(
    r"\b(NOT[\s_-]*(?:THE[\s_-]+)?SAME|NOT[\s_-]*(?:MEANINGFULLY[\s_-]+|REALLY[\s_-]+)?DIFFERENT"
    r"|NOT[\s_-]*NOVEL|SAME|DIFFERENT|NOVEL)\b"
)


def code_diff(existing: str, new: str) -> str:
    """Unified diff of the EVOLVE-BLOCK contents, at most ``MAX_DIFF_LINES`` lines."""
    lines = list(difflib.unified_diff(
        "\n".join(block_contents(existing)).splitlines(),
        "\n".join(block_contents(new)).splitlines(),
        "existing", "proposal", n=2, lineterm=""))
    shown, size = [], 0
    for line in lines:
        if len(shown) >= MAX_DIFF_LINES or size + len(line) > MAX_DIFF_CHARS:
            shown.append(f"... ({len(lines) - len(shown)} more diff lines)")
            break
        shown.append(line)
        size += len(line) + 1
    return "\n".join(shown) or "(no textual change in the mutable code)"


def judge_prompt(existing: str, new: str, *, text: bool = False) -> str:
    """``text``: the candidates are text artifacts (a prompt, a document), whose change is one of
    meaning, not of algorithm."""
    if text:
        return (
            "Here is a proposed change to a text.\n\n"
            f"```diff\n{code_diff(existing, new)}\n```\n\n"
            f"A new instruction, rule, example or approach, or one removed: answer "
            f"{ANSWER_NOVEL}. The same meaning in other words, or formatting and punctuation "
            f"only: answer {ANSWER_SAME}.\n"
            + JUDGE_QUESTION
        )
    return (
        "Here is a proposed change to a program.\n\n"
        f"```diff\n{code_diff(existing, new)}\n```\n\n"
        f"A new algorithm, strategy or structure: answer {ANSWER_NOVEL}. Renamed variables, "
        f"formatting, comments or a small constant change: answer {ANSWER_SAME}.\n"
        + JUDGE_QUESTION
    )


def parse_judge_reply(text: str) -> bool | None:
    """True: meaningfully different; False: the same program in effect; None: no verdict."""
    match = _VERDICT.search(text.upper())
    if match is None:
        return None
    words = re.sub(r"[\s_-]+", " ", match.group(1))
    if words.startswith("NOT"):
        return words.endswith(ANSWER_SAME)  # "not the same" is novel; "not novel" is not
    return words in (ANSWER_NOVEL, "NOVEL")
