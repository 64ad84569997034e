"""The ``full`` reply format: one code block with the whole new program or the new block.

* With EVOLVE-BLOCK markers, the blocks' contents are taken by index (the block count must
  match the parent's). Text outside the blocks always comes from the parent; a reply that
  changed it gets a note, not an error, because the intended edit inside is still usable.
* Without markers, when the parent has exactly one block, the code is that block's new content
  (re-indented if the block is indented and the reply is not). A reply that is evidently the
  whole program with its marker lines dropped is unwrapped instead of nested into the block.
* A parent without markers is replaced wholesale.
"""

from __future__ import annotations

from cambrian.lang.languages import Language
from cambrian.mutate.patch_types import PatchError, RefusalKind
from cambrian.mutate.reply_text import CodeFence, fences_for_language, find_fences
from cambrian.task.blocks import (
    BlockError,
    EvolveRegions,
    block_contents,
    check_immutable_unchanged,
    line_text,
    parse_marker,
    parse_regions,
    replace_block_contents,
    split_lines,
)


def _choose_fence(fences: list[CodeFence], parent: EvolveRegions, notes: list[str]) -> CodeFence:
    if len(fences) == 1:
        return fences[0]
    with_markers = [f for f in fences if any(parse_marker(line) for line in split_lines(f.body))]
    pool = with_markers if parent.has_markers and with_markers else fences
    chosen = max(pool, key=lambda fence: len(fence.body))
    notes.append(
        f"the reply had {len(fences)} code blocks; used the one starting on reply line {chosen.open_line + 1}"
    )
    return chosen


def _common_indent(lines: list[str]) -> str:
    code = [line_text(line) for line in lines if line.strip()]
    if not code:
        return ""
    return min((line[: len(line) - len(line.lstrip())] for line in code), key=len)


def _fit_indentation(code: str, block_lines: list[str], notes: list[str]) -> str:
    """Indent ``code`` like the block it replaces when the model returned it less indented."""
    target = _common_indent(block_lines)
    current = _common_indent(split_lines(code))
    if not target or len(current) >= len(target):
        return code
    notes.append("the code was re-indented to the EVOLVE-BLOCK's indentation")
    lines = split_lines(code)
    return "".join(target + line[len(current) :] if line.strip() else line for line in lines)


def _stripped(lines: list[str]) -> list[str]:
    texts = [line_text(line).rstrip() for line in lines]
    while texts and not texts[0]:
        texts.pop(0)
    while texts and not texts[-1]:
        texts.pop()
    return texts


def _stripped_blank_ends(lines: list[str]) -> list[str]:
    start = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    end = max((i + 1 for i, line in enumerate(lines) if line.strip()), default=start)
    return lines[start:end]


def _unwrap_whole_program(code: str, parent: EvolveRegions, notes: list[str]) -> str | None:
    """The block content of a reply that repeats the parent's surrounding code without markers."""
    block = parent.blocks[0]
    assert block.start_marker is not None and block.end_marker is not None
    prefix = _stripped(list(parent.lines[: block.start_marker]))
    suffix = _stripped(list(parent.lines[block.end_marker + 1 :]))
    if not prefix and not suffix:
        return None
    code_lines = split_lines(code)
    texts = [line_text(line).rstrip() for line in code_lines]
    first = next((i for i, text in enumerate(texts) if text), 0)
    last = max((i for i, text in enumerate(texts) if text), default=-1) + 1
    starts_like_parent = texts[first : first + len(prefix)] == prefix
    ends_like_parent = not suffix or texts[last - len(suffix) : last] == suffix
    if starts_like_parent and ends_like_parent:
        notes.append(
            "the reply was the whole program without marker lines; "
            "took the code between the parent's surrounding lines"
        )
        middle = code_lines[first + len(prefix) : last - len(suffix)]
        return "".join(_stripped_blank_ends(middle))
    outside = [t.strip() for t in prefix + suffix if t.strip() and parse_marker(t) is None]
    present = {text.strip() for text in texts}
    if len(outside) >= 2 and all(text in present for text in outside):
        raise PatchError(
            "the code block looks like the whole program but its EVOLVE-BLOCK-START/EVOLVE-BLOCK-END "
            "marker lines are missing; keep the marker lines exactly as they are."
        )
    return None


def _without_markers(code: str, notes: list[str]) -> str:
    lines = split_lines(code)
    kept = [line for line in lines if parse_marker(line) is None]
    if len(kept) != len(lines):
        notes.append("removed EVOLVE-BLOCK marker lines that the program does not have")
    return "".join(kept)


def _one_sided_block(code: str, notes: list[str]) -> str | None:
    """The block content of a reply holding a lone START or a lone END marker (small models often
    drop one of the two); None when the reply has any other marker layout."""
    lines = split_lines(code)
    markers = [(i, parse_marker(line)) for i, line in enumerate(lines) if parse_marker(line)]
    if len(markers) != 1:
        return None
    index, marker = markers[0]
    assert marker is not None
    notes.append(f"the code block had only an EVOLVE-BLOCK-{marker.kind.upper()} marker; "
                 "took the code on its inner side")
    inner = lines[:index] if marker.kind == "end" else lines[index + 1 :]
    return "".join(inner)


def _has_text_outside_blocks(regions: EvolveRegions) -> bool:
    markers = set(regions.marker_lines())
    return any(line_text(regions.lines[i]).strip()
               for start, end in regions.immutable_segments() for i in range(start, end)
               if i not in markers)


def _drop_echoed_suffix(code: str, parent: EvolveRegions, notes: list[str]) -> str:
    """``code`` without a tail that repeats the fixed code after the parent's block (a reply
    that went on past the block's end, writing out the rest of the file)."""
    block = parent.blocks[0]
    assert block.end_marker is not None
    suffix = [t.strip() for t in _stripped(list(parent.lines[block.end_marker + 1:])) if t.strip()]
    lines = split_lines(code)
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    for k in range(len(suffix), 1, -1):  # the whole fixed tail, or its first k lines
        if len(nonblank) > k and [line_text(lines[i]).strip() for i in nonblank[-k:]] == suffix[:k]:
            notes.append(f"dropped {k} lines after the block that repeat the program's fixed code")
            return "".join(_stripped_blank_ends(lines[: nonblank[-k]]))
    return code


def _new_source(parent_source: str, parent: EvolveRegions, code: str, notes: list[str]) -> str:
    if parent.has_markers and len(parent.blocks) == 1:
        one_sided = _one_sided_block(code, notes)
        if one_sided is not None:
            code = _drop_echoed_suffix(one_sided, parent, notes)
    try:
        reply_regions = parse_regions(code)
    except BlockError as exc:
        raise PatchError(f"the EVOLVE-BLOCK markers in the code block are broken: {exc}") from None
    if not parent.has_markers:
        return _without_markers(code, notes)
    if reply_regions.has_markers:
        if len(reply_regions.blocks) != len(parent.blocks):
            raise PatchError(
                f"the code block has {len(reply_regions.blocks)} EVOLVE-BLOCK(s) but the program has "
                f"{len(parent.blocks)}; return the whole program with all {len(parent.blocks)} blocks "
                "and their marker lines unchanged."
            )
        try:
            check_immutable_unchanged(parent_source, code)
        except BlockError as exc:
            if _has_text_outside_blocks(reply_regions):  # not just the blocks on their own
                notes.append(f"ignored changes outside the EVOLVE-BLOCKs ({exc}); "
                             "kept the parent's text there")
        return replace_block_contents(parent_source, block_contents(code))
    if len(parent.blocks) > 1:
        raise PatchError(
            f"the program has {len(parent.blocks)} EVOLVE-BLOCKs; return the whole program including "
            "every EVOLVE-BLOCK-START and EVOLVE-BLOCK-END marker line."
        )
    block = parent.blocks[0]
    content = _unwrap_whole_program(code, parent, notes)
    if content is None:
        content = code
    content = _fit_indentation(content, list(parent.lines[block.content_start : block.content_end]), notes)
    return replace_block_contents(parent_source, [content])


def apply_full_reply(parent_source: str, reply: str, language: Language) -> tuple[str, int, list[str]]:
    """Apply a whole-program (or whole-block) reply; returns (source, blocks changed, notes)."""
    notes: list[str] = []
    fences = fences_for_language(find_fences(reply), language)
    if not fences:
        raise PatchError(
            f"no code block found: put the complete {language.noun} in one "
            f"```{language.fence_tag} ... ``` block."
        )
    parent = parse_regions(parent_source)
    code = _choose_fence(fences, parent, notes).body
    if not code.strip():
        raise PatchError(f"the code block is empty; put the complete {language.noun} in it.")
    source = _new_source(parent_source, parent, code, notes)
    if parent.has_markers:
        before, after = block_contents(parent_source), block_contents(source)
        changed = sum(old.rstrip() != new.rstrip() for old, new in zip(before, after))
    else:
        changed = int(source.rstrip() != parent_source.rstrip())
    if not changed:
        if any(note.startswith("ignored changes outside") for note in notes):
            raise PatchError(
                "the reply only changed code outside the EVOLVE-BLOCKs, which cannot change; "
                "change the code between EVOLVE-BLOCK-START and EVOLVE-BLOCK-END."
            )
        what = "text" if language.text else "code"
        raise PatchError(f"the {what} in the reply is identical to the current {language.noun}; "
                         "change something.", kind=RefusalKind.NO_CHANGE)
    return source, changed, notes
