"""A scripted model for any task: each reply changes one number of the parent's EVOLVE-BLOCK,
in the reply format the prompt asked for. The documentation's commands run against it
(tests/test_docs_commands.py), whatever task a tutorial evolves."""

from __future__ import annotations

import re

from cambrian.search.novelty_judge import JUDGE_QUESTION
from support.scripted_llm import CODE_BLOCK, SCRIPTED_META_REPLY

BLOCK = re.compile(r"EVOLVE-BLOCK-START[^\n]*\n(.*?)\n[^\n]*EVOLVE-BLOCK-END", re.DOTALL)
NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.])")


def _changed_line(block: str, step: int) -> tuple[str, str] | None:
    """(old line, new line): the first line of code holding an integer, that integer raised."""
    for line in block.splitlines():
        code = line.split("#", 1)[0].split("//", 1)[0]
        match = NUMBER.search(code)
        if match and not code.lstrip().startswith(("import", "#include", "from")):
            value = int(match.group(1))
            new = line[:match.start()] + str(value + step) + line[match.end():]
            return line, new
    return None


def numeric_edit(messages: list[dict[str, str]], index: int) -> str:
    last = messages[-1]["content"]
    if "Update the notes" in last:
        return SCRIPTED_META_REPLY
    if JUDGE_QUESTION in last:
        return "DIFFERENT"
    first_user = next((m["content"] for m in messages if m["role"] == "user"), "")
    program = CODE_BLOCK.search(first_user)
    block = BLOCK.search(program.group(1)) if program else None
    change = _changed_line(block.group(1), index + 1) if block else None
    if change is None:
        return "No change to propose."
    old, new = change
    if "SEARCH" in first_user.split("## Your task")[-1]:
        return f"Raise a setting\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"
    fence = "cpp" if "#include" in program.group(1) else "python"
    return f"Raise a setting\n```{fence}\n{block.group(1).replace(old, new, 1)}\n```\n"
