"""The ``function`` reply format: complete function definitions that replace their namesakes.

Each function in the reply replaces the definition with the same name inside an EVOLVE-BLOCK
(re-indented to where that definition sits); a line assigning a constant defined outside the
functions replaces that constant's line (:mod:`cambrian.mutate.setting_lines`). A new name is
added to the last block, except in C and C++, where a function must be declared before use:
there it goes right before the first block definition that mentions it. A name defined only
outside the blocks is an error.
"""

from __future__ import annotations

import re
import textwrap

from cambrian.lang.code_mask import mask_code
from cambrian.lang.definitions import (
    Definition,
    code_outside,
    find_definitions,
    supports_functions,
)
from cambrian.lang.languages import Language
from cambrian.mutate.patch_types import PatchError, RefusalKind
from cambrian.mutate.reply_text import fences_for_language, find_fences
from cambrian.mutate.setting_lines import apply_number_edits, apply_setting_lines, setting_lines
from cambrian.task.blocks import EvolveRegions, line_text, parse_marker, parse_regions, split_lines

_DECLARE_BEFORE_USE = frozenset({"c", "cpp"})
IDENTICAL = "the function(s) in the reply are identical to the current program; change something."


def _reply_functions(reply: str, language: Language) -> tuple[list[tuple[str, str]], list[str]]:
    """(name, dedented code) of each complete definition in the reply's code blocks, and the
    reply's lines of code outside every definition."""
    fences = fences_for_language(find_fences(reply), language)
    if not fences:
        raise PatchError(
            f"no code block found: put the complete function(s) in one ```{language.fence_tag} ... ``` block."
        )
    functions: list[tuple[str, str]] = []
    stray: list[str] = []
    for fence in fences:
        # Models often copy the marker lines around their functions; they carry no code.
        lines = [line for line in split_lines(fence.body) if parse_marker(line) is None]
        body = "".join(lines)
        try:
            definitions = find_definitions(body, language, top_level_only=True)
            leftovers = code_outside(body, language, definitions)
        except SyntaxError as exc:
            raise PatchError(f"the code block does not parse: line {exc.lineno}: {exc.msg}") from None
        stray.extend(lines[index] for index in leftovers if index < len(lines))
        for definition in definitions:
            code = textwrap.dedent("".join(lines[definition.start : definition.end]))
            functions.append((definition.name, code))
    names = [name for name, _ in functions]
    for name in names:
        if names.count(name) > 1:
            raise PatchError(f"the reply defines `{name}` more than once; give each function once.")
    return functions, stray


def _indented(code: str, indent: str) -> list[str]:
    lines = split_lines(code)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return [indent + line if line.strip() else "\n" for line in lines]


def _block_indent(regions: EvolveRegions, start: int, end: int) -> str:
    code = [line_text(line) for line in regions.lines[start:end] if line.strip()]
    if not code:
        return ""
    return min((line[: len(line) - len(line.lstrip())] for line in code), key=len)


def _lines_text(regions: EvolveRegions, definition: Definition) -> str:
    return "".join(regions.lines[definition.start : definition.end])


def _choose_target(name: str, candidates: list[Definition], regions: EvolveRegions) -> Definition:
    inside = [d for d in candidates if regions.block_containing(d.start, d.end) is not None]
    straddling = [d for d in candidates if any(d.start <= m < d.end for m in regions.marker_lines())]
    if not inside and straddling:
        d = straddling[0]
        raise PatchError(
            f"function `{name}` (lines {d.start + 1}-{d.end}) is only partly inside the EVOLVE-BLOCK, "
            "so it cannot be replaced whole; give only functions that lie entirely between "
            "EVOLVE-BLOCK-START and EVOLVE-BLOCK-END."
        )
    if not inside:
        where = ", ".join(f"line {d.start + 1}" for d in candidates)
        raise PatchError(
            f"function `{name}` is defined outside the EVOLVE-BLOCK ({where}) and cannot be changed; "
            "only functions between EVOLVE-BLOCK-START and EVOLVE-BLOCK-END can be replaced."
        )
    shallowest = min(d.depth for d in inside)
    top = [d for d in inside if d.depth == shallowest]
    if len(top) > 1:
        where = ", ".join(f"line {d.start + 1}" for d in top)
        raise PatchError(
            f"`{name}` is defined {len(top)} times in the EVOLVE-BLOCK ({where}); "
            "it is unclear which one to replace."
        )
    return top[0]


def _insertion_point(
    name: str, definitions: list[Definition], regions: EvolveRegions, source: str, language: Language
) -> int:
    """Line before which a new function goes (0-based)."""
    if language.name in _DECLARE_BEFORE_USE:
        masked_lines = split_lines(mask_code(source, language))
        for definition in definitions:
            if regions.block_containing(definition.start, definition.end) is None:
                continue
            body = "".join(masked_lines[definition.start : definition.end])
            if _mentions(body, name):
                return definition.start
    return regions.blocks[-1].content_end


def _mentions(code: str, name: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", code) is not None


def _put_function(
    source: str, name: str, code: str, language: Language, notes: list[str]
) -> tuple[str, bool]:
    """``source`` with function ``name`` replaced or added; also whether anything changed."""
    regions = parse_regions(source)
    try:
        definitions = find_definitions(source, language, top_level_only=False)
    except SyntaxError as exc:
        raise PatchError(
            f"the current program does not parse (line {exc.lineno}: {exc.msg}), "
            "so its functions cannot be located."
        ) from None
    lines = list(regions.lines)
    candidates = [d for d in definitions if d.name == name]
    if candidates:
        target = _choose_target(name, candidates, regions)
        first_line = line_text(lines[target.start])
        new_lines = _indented(code, first_line[: len(first_line) - len(first_line.lstrip())])
        if "".join(new_lines).rstrip() == _lines_text(regions, target).rstrip():
            return source, False
        if not lines[target.end - 1].endswith("\n"):
            new_lines[-1] = line_text(new_lines[-1])
        return "".join(lines[: target.start] + new_lines + lines[target.end :]), True

    position = _insertion_point(name, definitions, regions, source, language)
    block = regions.block_containing(position, position) or regions.blocks[-1]
    new_lines = _indented(code, _block_indent(regions, block.content_start, block.content_end))
    if position > 0 and not lines[position - 1].endswith("\n"):
        lines[position - 1] += "\n"
    if position > block.content_start and lines[position - 1].strip():
        new_lines.insert(0, "\n")
    if position < block.content_end:
        new_lines.append("\n")
        notes.append(f"new function `{name}` was placed before its first use (line {position + 1})")
    return "".join(lines[:position] + new_lines + lines[position:]), True


def _without_fixed_functions(functions: list[tuple[str, str]], definitions: list[Definition],
                             regions: EvolveRegions, notes: list[str]) -> list[tuple[str, str]]:
    """Drop the reply's functions that exist only outside the EVOLVE-BLOCKs (a small model
    often sends the function that calls the one it changed, too), when something else is left;
    a reply made only of such functions is refused by ``_choose_target``'s precise error."""
    fixed = {d.name for d in definitions} - {
        d.name for d in definitions if regions.block_containing(d.start, d.end) is not None}
    kept = [(name, code) for name, code in functions if name not in fixed]
    if not kept or len(kept) == len(functions):
        return functions
    dropped = sorted({name for name, _ in functions if name in fixed})
    notes.append(f"left {', '.join(f'`{n}`' for n in dropped)} as it is: outside the "
                 "EVOLVE-BLOCK, it cannot change")
    return kept


def apply_function_reply(parent_source: str, reply: str, language: Language) -> tuple[str, int, list[str]]:
    """Apply every function and setting line (:mod:`setting_lines`) of ``reply``; returns
    (source, functions and settings changed, notes)."""
    if not supports_functions(language):
        raise ValueError(
            f"the function reply format does not support {language.name}; use the diff or full format"
        )
    notes: list[str] = []
    functions, stray = _reply_functions(reply, language)
    source, settings, unused = apply_setting_lines(parent_source, stray, language)
    edited = 0
    if not functions and not settings and unused:  # only lines: new numbers for some of them
        source, edited, unused = apply_number_edits(source, unused, language)
        if edited:
            notes.append(f"changed the numbers of {edited} line(s)")
    if unused:
        first = line_text(unused[0]).strip()
        notes.append(f"ignored {len(unused)} line(s) of code outside the functions, e.g. `{first}`")
    if not functions and not settings and not edited:
        if len(unused) < len(stray):  # a constant's line, given with its current value
            raise PatchError(IDENTICAL, kind=RefusalKind.NO_CHANGE)
        raise PatchError(
            "the code block holds no complete function definition: give each whole function, "
            "from its signature line to its last line"
            + (" (or the line of a constant defined outside the functions, with its new value)."
               if setting_lines(parent_source, language) else ".")
        )
    if settings:
        notes.append(f"changed the setting line(s) of {', '.join(f'`{n}`' for n in settings)}")
    try:
        definitions = find_definitions(parent_source, language, top_level_only=False)
    except SyntaxError:
        definitions = []  # _put_function reports the parse error
    existing = {d.name for d in definitions}
    functions = _without_fixed_functions(functions, definitions, parse_regions(parent_source), notes)
    # Replace known functions first, so that new helpers can be placed before their callers.
    functions.sort(key=lambda function: function[0] not in existing)
    changed = len(settings) + edited
    for name, code in functions:
        source, did_change = _put_function(source, name, code, language, notes)
        changed += did_change
    if not changed:
        raise PatchError(IDENTICAL, kind=RefusalKind.NO_CHANGE)
    return source, changed, notes
