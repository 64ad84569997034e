"""Setting lines in the ``function`` reply format: a constant defined outside every function.

Whole-function replies cannot change ``const double DISTANCE_POWER = 1.0;`` or
``RADIUS_SCALE = 0.9`` when those sit at the top of the EVOLVE-BLOCK, yet that is exactly what a
tuning prompt asks for. A reply line that assigns one of those names replaces the program's line
for it (kept at its indentation); every other stray line is ignored as before.

A *setting line* is a single-line assignment of one name, outside every function and inside an
EVOLVE-BLOCK: ``NAME = value`` at module level in Python; in brace languages a declaration or
assignment ending in ``;`` on the same line with no ``{`` (array initialisers stay out), or
``#define NAME value``.

A tuning prompt also lists lines inside functions whose numbers may change
(``tuning_targets.py``), and a small model then answers with just that line, new numbers and
all. Such a reply, with no whole function in it, is applied as a *number edit*
(``apply_number_edits``): a reply line equal, numbers aside, to exactly one line of the
EVOLVE-BLOCKs replaces that line.
"""

from __future__ import annotations

import ast
import re

from cambrian.core.python_ast import parse_python
from cambrian.lang.code_mask import code_tokens, mask_code
from cambrian.lang.definitions import code_outside, find_definitions
from cambrian.lang.languages import Language
from cambrian.task.blocks import BlockError, line_text, parse_regions, split_lines

# [qualifiers and type] NAME [: type] = value;   (the type part covers Rust's `const X: f64`)
_BRACE_ASSIGNMENT = re.compile(
    r"^\s*(?:[\w:<>,*&\s]*?\s)?[*&]*([A-Za-z_]\w*)\s*(?::\s*[\w:<>&]+\s*)?=(?!=)\s*[^;{]+;\s*$")
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)\s+\S.*$")


def setting_name(line: str, language: Language) -> str | None:
    """The name a single line assigns, when the line is a setting line on its own."""
    text = line_text(line)
    if not text.strip():
        return None
    if language.name == "python":
        try:
            tree = parse_python(text.strip())
        except SyntaxError:
            return None
        if len(tree.body) != 1:
            return None
        statement = tree.body[0]
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target = statement.target
        else:
            return None
        return target.id if isinstance(target, ast.Name) else None
    define = _DEFINE.match(text)
    if define:
        return define.group(1)
    masked = line_text(mask_code(text, language))
    match = _BRACE_ASSIGNMENT.match(masked)
    return match.group(1) if match else None


def _code_of(line: str, language: Language) -> str:
    """A setting line's code without its comment or layout, for "did the value change"."""
    text = line_text(line).strip()
    if language.name == "python":
        return ast.dump(parse_python(text))  # 1.0 and 1.00 are the same value
    return " ".join(code_tokens(text, language))


def setting_lines(source: str, language: Language) -> dict[str, int]:
    """Name -> 0-based line of each setting line of ``source`` (names assigned on one line
    only; a name assigned twice is ambiguous and left out)."""
    try:
        regions = parse_regions(source)
        definitions = find_definitions(source, language, top_level_only=True)
        outside = code_outside(source, language, definitions)
    except (BlockError, SyntaxError):
        return {}
    lines = split_lines(source)
    found: dict[str, list[int]] = {}
    for index in outside:
        if index >= len(lines) or not regions.is_mutable(index):
            continue
        if language.name == "python" and lines[index][:1].isspace():
            continue  # a continuation or a nested statement, not a module-level line
        name = setting_name(lines[index], language)
        if name is not None:
            found.setdefault(name, []).append(index)
    return {name: where[0] for name, where in found.items() if len(where) == 1}


def offers_setting_lines(fmt: str, source: str, language: Language) -> bool:
    """Whether a reply in format ``fmt`` to a mutation of ``source`` may change setting lines:
    the prompt's sentence and the local grammar's opening both follow this one rule."""
    return fmt == "function" and bool(setting_lines(source, language))


def apply_setting_lines(source: str, reply_lines: list[str], language: Language,
                        ) -> tuple[str, list[str], list[str]]:
    """``source`` with each reply line that assigns one of its setting names put in place of the
    program's line for that name. Returns (source, names changed, reply lines not used)."""
    targets = setting_lines(source, language)
    lines = split_lines(source)
    changed: list[str] = []
    unused: list[str] = []
    for reply_line in reply_lines:
        name = setting_name(reply_line, language)
        if name is None or name not in targets:
            unused.append(reply_line)
            continue
        index = targets[name]
        old = lines[index]
        indent = old[: len(old) - len(old.lstrip())]
        new = indent + line_text(reply_line).strip() + ("\n" if old.endswith("\n") else "")
        if _code_of(new, language) != _code_of(old, language):
            lines[index] = new
            if name not in changed:
                changed.append(name)
    return "".join(lines), changed, unused


_NUMBER = re.compile(r"(?<![\w.])\d+\.?\d*(?:[eE][-+]?\d+)?|(?<![\w.])\.\d+(?:[eE][-+]?\d+)?")


def _shape(line: str, language: Language) -> str:
    """A line's code with every number masked: two lines of one shape differ only in numbers."""
    return _NUMBER.sub("#", " ".join(code_tokens(line_text(line).strip(), language)))


def apply_number_edits(source: str, reply_lines: list[str], language: Language,
                       ) -> tuple[str, int, list[str]]:
    """``source`` with each reply line that matches, numbers aside, exactly one line inside its
    EVOLVE-BLOCKs put in that line's place. Returns (source, lines changed, reply lines not
    used)."""
    try:
        regions = parse_regions(source)
    except BlockError:
        return source, 0, list(reply_lines)
    lines = split_lines(source)
    by_shape: dict[str, list[int]] = {}
    for index, line in enumerate(lines):
        if regions.is_mutable(index) and line.strip() and _NUMBER.search(line):
            by_shape.setdefault(_shape(line, language), []).append(index)
    changed, unused = 0, []
    for reply_line in reply_lines:
        where = by_shape.get(_shape(reply_line, language), []) if reply_line.strip() else []
        if len(where) != 1:
            unused.append(reply_line)
            continue
        old = lines[where[0]]
        indent = old[: len(old) - len(old.lstrip())]
        new = indent + line_text(reply_line).strip() + ("\n" if old.endswith("\n") else "")
        if _code_of(new, language) != _code_of(old, language):
            lines[where[0]] = new
            changed += 1
    return "".join(lines), changed, unused
