"""Read the parts of an LLM reply: fenced code blocks and the optional one-line description.

Tolerant of what models actually write: any or no language tag, prose before and after the
code, fences indented inside list items, and a closing fence glued to the last code line.
A fence that is opened but never closed means the reply was cut off, which is reported with
:data:`TRUNCATED_FENCE_MESSAGE` so the caller can tell truncation from a wrong reply.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cambrian.lang.languages import GENERIC, Language, language_for_fence_tag
from cambrian.llm.base import LLMResponse
from cambrian.mutate.patch_types import TRUNCATED_FENCE_MESSAGE, PatchError
from cambrian.task.blocks import line_text, split_lines

_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*)$")
_FENCE_CLOSE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*$")
_TRAILING_FENCE = re.compile(r"\s*(`{3,}|~{3,})[\w+#.-]*\s*$")
_DESCRIPTION_PREFIX = re.compile(r"^(description|summary|change|changes|idea)\s*:\s*", re.IGNORECASE)
MAX_DESCRIPTION_CHARS = 200
# The stop sequence that ends a code-block reply at its closing fence (not part of the text).
CODE_BLOCK_STOP = "\n```\n"


@dataclass(frozen=True)
class CodeFence:
    tag: str  # first word of the info string, lower-case ("" when absent)
    body: str  # the code, each line ending with "\n"
    open_line: int  # 0-based line of the opening fence in the reply
    close_line: int  # 0-based line of the closing fence


def is_fence_line(line: str) -> bool:
    return _FENCE_OPEN.match(line_text(line)) is not None


def _dedent_body(lines: list[str], indent: str) -> str:
    body = []
    for line in lines:
        text = line_text(line)
        body.append((text[len(indent) :] if text.startswith(indent) else text.lstrip()) + "\n")
    return "".join(body)


def _glued_close(lines: list[str], start: int, fence: str) -> int | None:
    """Index of the last code line when it ends with the closing fence ("return x```")."""
    for index in range(len(lines) - 1, start, -1):
        text = line_text(lines[index]).rstrip()
        if not text:
            continue
        return index if text.endswith(fence) and len(text) > len(fence) else None
    return None


def find_fences(text: str) -> list[CodeFence]:
    """All fenced code blocks of ``text``; raises :class:`PatchError` (truncated) when the last
    one is never closed."""
    lines = split_lines(text)
    fences: list[CodeFence] = []
    index = 0
    while index < len(lines):
        opened = _FENCE_OPEN.match(line_text(lines[index]))
        if opened is None:
            index += 1
            continue
        fence, indent = opened["fence"], opened["indent"]
        tag = opened["info"].strip().split(" ")[0].lower() if opened["info"].strip() else ""
        close = index + 1
        while close < len(lines):
            closing = _FENCE_CLOSE.match(line_text(lines[close]))
            if closing and closing["fence"][0] == fence[0] and len(closing["fence"]) >= len(fence):
                break
            close += 1
        if close < len(lines):
            fences.append(CodeFence(tag, _dedent_body(lines[index + 1 : close], indent), index, close))
            index = close + 1
            continue
        glued = _glued_close(lines, index, fence)
        if glued is None:
            raise PatchError(TRUNCATED_FENCE_MESSAGE, truncated=True)
        body_lines = lines[index + 1 : glued] + [line_text(lines[glued]).rstrip()[: -len(fence)]]
        fences.append(CodeFence(tag, _dedent_body(body_lines, indent), index, glued))
        break
    return fences


def fences_for_language(fences: list[CodeFence], language: Language) -> list[CodeFence]:
    """The fences that hold code in ``language``: untagged ones and ones tagged with the
    language; all fences when none qualifies (models mislabel C++ as C, TypeScript as JS...)."""
    if language is GENERIC:
        return list(fences)
    matching = [f for f in fences if not f.tag or language_for_fence_tag(f.tag) is language]
    return matching or list(fences)


def clean_description(line: str) -> str:
    text = _TRAILING_FENCE.sub("", line.strip()).lstrip("#>*- \t").strip()
    text = text.replace("**", "").replace("__", "").strip()
    text = _DESCRIPTION_PREFIX.sub("", text).strip().strip("`").strip()
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return text


def extract_description(text: str, starts_code: Callable[[str], bool] = is_fence_line) -> str:
    """The first non-empty line before the code, cleaned of markdown ("" when the reply starts
    with code)."""
    for line in split_lines(text):
        if not line.strip():
            continue
        if starts_code(line):
            return ""
        return clean_description(line_text(line))
    return ""


def stopped_reply_text(reply: LLMResponse | str, stop: Sequence[str]) -> str:
    """The reply text with the closing fence put back when generation ended on the
    :data:`CODE_BLOCK_STOP` sequence (which servers leave out of the text). A reply cut at the
    token limit stays cut, so that it is still reported as truncated."""
    if isinstance(reply, str):
        text = reply
    elif reply.truncated:
        return reply.text
    else:
        text = reply.text
    if CODE_BLOCK_STOP not in stop:
        return text
    fences = sum(1 for line in text.splitlines() if _FENCE_OPEN.match(line))
    return text.rstrip("\n") + "\n```\n" if fences % 2 else text
