"""LLM-free merge of two programs that descend from a common ancestor (GEPA's merge operator).

The EVOLVE-BLOCK content of each program is cut into top-level *regions*, each with a key:

* Python (parsed with ``ast``): one region per top-level statement, keyed by what it defines
  (``def``/``class`` name, assignment targets, the import itself); comments and blank lines
  travel with the statement above them.
* Other languages (line based): a region starts at an unindented line that is not a closing
  bracket; comment lines directly above it belong to it. The key is the region's first code
  line up to ``{``, ``=`` or ``:``.

Regions are then merged three ways against the common ancestor: a region changed by one parent
only comes from that parent (a deletion is a change too); a region changed by both comes from
the *preferred* parent, the one that is better on more test cases.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass

from cambrian.core.python_ast import parse_python
from cambrian.task.blocks import BlockError, block_contents, replace_block_contents, split_lines

RegionKey = tuple[str, str, int]  # (kind, name, occurrence)


@dataclass(frozen=True)
class Region:
    key: RegionKey
    text: str


def _keyed(raw: list[tuple[str, str, str]]) -> list[Region]:
    seen: Counter[tuple[str, str]] = Counter()
    regions = []
    for kind, name, text in raw:
        regions.append(Region((kind, name, seen[(kind, name)]), text))
        seen[(kind, name)] += 1
    return regions


def _python_key(node: ast.stmt) -> tuple[str, str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return "def", node.name
    if isinstance(node, ast.Assign):
        return "assign", ", ".join(ast.unparse(t) for t in node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return "assign", ast.unparse(node.target)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return "import", ast.unparse(node)
    return "stmt", type(node).__name__


def python_regions(code: str) -> list[Region] | None:
    """Regions of Python ``code``; None when it does not parse."""
    try:
        tree = parse_python(code)
    except SyntaxError:
        return None
    lines = split_lines(code)
    starts = [min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
              for node in tree.body]
    raw: list[tuple[str, str, str]] = []
    if not starts or starts[0] > 0:
        raw.append(("header", "", "".join(lines[: starts[0] if starts else len(lines)])))
    for i, node in enumerate(tree.body):
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        kind, name = _python_key(node)
        raw.append((kind, name, "".join(lines[starts[i]:end])))
    return _keyed(raw)


_COMMENT = re.compile(r"^(//|/\*|\*|--|;|%|#(?!\s*(include|define|undef|if|ifdef|ifndef|else|"
                      r"elif|endif|pragma|import)\b))")
_CLOSING = re.compile(r"^(\}|\)|\]|end\b|fi\b|done\b|esac\b)")


def line_regions(code: str) -> list[Region]:
    """Regions of ``code`` in any language, found from indentation alone."""
    lines = split_lines(code)
    starts: list[int] = []
    previous_comment = False  # an unindented comment line directly above
    for index, line in enumerate(lines):
        text = line.rstrip("\r\n")
        at_top_level = bool(text.strip()) and not text[0].isspace()
        is_comment = at_top_level and bool(_COMMENT.match(text))
        if at_top_level and not _CLOSING.match(text) and not previous_comment:
            starts.append(index)
        previous_comment = is_comment
    if not starts or starts[0] > 0:
        starts.insert(0, 0)
    raw = []
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(lines)
        chunk = lines[start:end]
        head = next((line.strip() for line in chunk
                     if line.strip() and not _COMMENT.match(line.strip())), "")
        name = re.split(r"[{=:]", head, maxsplit=1)[0].strip() if head else ""
        raw.append(("block" if head else "header", " ".join(name.split()), "".join(chunk)))
    return _keyed(raw)


def _same(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    return [line.rstrip() for line in a.strip().splitlines()] == \
        [line.rstrip() for line in b.strip().splitlines()]


def merge_regions(base: list[Region], preferred: list[Region], other: list[Region]) -> list[Region]:
    """Three-way merge keyed by region; the result follows the preferred parent's order, with
    regions only the other parent has inserted after their predecessor there."""
    base_text = {r.key: r.text for r in base}
    pref_text = {r.key: r.text for r in preferred}
    other_text = {r.key: r.text for r in other}
    chosen: dict[RegionKey, str | None] = {}
    for key in list(pref_text) + [k for k in other_text if k not in pref_text]:
        b, p, o = base_text.get(key), pref_text.get(key), other_text.get(key)
        if _same(p, o) or _same(o, b):
            chosen[key] = p
        elif _same(p, b):
            chosen[key] = o  # only the other parent changed (or added, or deleted) it
        else:
            chosen[key] = p  # both changed it: the preferred parent wins
    order = [r.key for r in preferred]
    for index, region in enumerate(other):
        if region.key in order:
            continue
        anchor = next((other[j].key for j in range(index - 1, -1, -1) if other[j].key in order), None)
        order.insert(order.index(anchor) + 1 if anchor is not None else 0, region.key)
    merged = []
    for key in order:
        text = chosen.get(key)
        if text is not None:
            merged.append(Region(key, text if text.endswith("\n") or not text else text + "\n"))
    return merged


def merge_block(base: str, preferred: str, other: str, python: bool) -> str | None:
    if python:
        cut = [python_regions(code) for code in (base, preferred, other)]
        if any(regions is None for regions in cut):
            return None
        merged = "".join(r.text for r in merge_regions(*cut))  # type: ignore[arg-type]
        try:
            parse_python(merged)
        except SyntaxError:
            return None
        return merged
    return "".join(r.text for r in merge_regions(line_regions(base), line_regions(preferred),
                                                 line_regions(other)))


def merge_programs(ancestor: str, preferred: str, other: str, *, python: bool) -> str | None:
    """The merged program, or None when the blocks do not line up, the result does not parse,
    or it equals one of the parents (nothing new to evaluate)."""
    try:
        blocks = [block_contents(source) for source in (ancestor, preferred, other)]
    except BlockError:
        return None
    if len({len(b) for b in blocks}) != 1:
        return None
    merged_blocks = []
    for base, pref, oth in zip(*blocks):
        merged = merge_block(base, pref, oth, python)
        if merged is None:
            return None
        merged_blocks.append(merged)
    try:
        result = replace_block_contents(preferred, merged_blocks)
    except BlockError:
        return None
    if python:
        try:
            parse_python(result)
        except SyntaxError:
            return None
    if result in (preferred, other):
        return None
    return result
