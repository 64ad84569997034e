"""Expose a program's knobs as one parameter block (seed 001 B.9).

Python: a ``PARAMS = {...}`` dict goes after the shebang, encoding line, module docstring and
``from __future__`` imports, and each knob's literal becomes ``PARAMS["name"]``. C-family: a block
of ``#define _BO_NAME value`` lines goes after the last ``#include`` and each literal becomes the
macro. Rendering the block at the knobs' defaults reproduces the original values exactly (ints
stay ints, floats round-trip through ``repr``, C literal suffixes such as ``f`` are kept), so the
rewritten program behaves like the original there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from cambrian.core.python_ast import parse_python
from cambrian.lang.languages import as_language
from cambrian.task.knobs import Knob, LiteralSite, literal_sites, locate

_SUFFIX = re.compile(r"[fFlLuU]+$")
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b.*$", re.MULTILINE)
BLOCK_TITLE = "Tunable constants (exposed by cambrian trace tune)"


def format_value(value: float, knob: Knob) -> str:
    """A literal for ``value`` in the knob's kind, keeping the original C suffix."""
    if knob.kind == "int":
        text = str(round(value))
    else:
        text = repr(float(value))
        if not any(c in text for c in ".e"):
            text += ".0"
    suffix = _SUFFIX.search(knob.source_literal)
    if suffix and not knob.source_literal.lower().startswith("0x"):
        text += suffix.group(0)
    return f"({text})" if value < 0 else text


def _python_insert_offset(source: str) -> int:
    tree = parse_python(source)
    body = list(tree.body)
    last_end = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        last_end = body.pop(0).end_lineno or 0
    while body and isinstance(body[0], ast.ImportFrom) and body[0].module == "__future__":
        last_end = body.pop(0).end_lineno or last_end
    lines = source.split("\n")
    if last_end == 0:  # keep a shebang and an encoding declaration first
        while last_end < min(2, len(lines)) and re.match(r"#!|#.*coding[:=]", lines[last_end]):
            last_end += 1
    return sum(len(line) + 1 for line in lines[:last_end])


def _brace_insert_offset(source: str) -> int:
    includes = list(_INCLUDE.finditer(source))
    if not includes:
        return 0
    end = includes[-1].end()
    return min(len(source), end + 1)


@dataclass(frozen=True)
class ParameterisedProgram:
    language: str
    knobs: tuple[Knob, ...]
    body: str  # the source with knob references, without the parameter block
    insert_at: int  # where the block goes in ``body``
    params_name: str  # Python dict name
    dropped: dict[str, str] = field(default_factory=dict)  # knob name -> why it was dropped

    def reference(self, knob: Knob) -> str:
        return _reference(self.language, self.params_name, knob)

    def block(self, values: Mapping[str, float]) -> str:
        if self.language == "python":
            rows = "".join(f"    {k.name!r}: {format_value(values[k.name], k)},\n"
                           for k in self.knobs)
            return f"# {BLOCK_TITLE}\n{self.params_name} = {{\n{rows}}}\n"
        rows = "".join(f"#define {_macro(k)} {format_value(values[k.name], k)}\n"
                       for k in self.knobs)
        return f"// {BLOCK_TITLE}\n{rows}"

    def render(self, values: Mapping[str, float] | None = None) -> str:
        """The program with the block set to ``values`` (defaults for missing knobs)."""
        chosen = {k.name: k.default for k in self.knobs}
        chosen.update(values or {})
        prefix = self.body[:self.insert_at]
        if prefix and not prefix.endswith("\n"):
            prefix += "\n"
        return prefix + self.block(chosen) + self.body[self.insert_at:]

    def defaults(self) -> dict[str, float]:
        return {k.name: k.default for k in self.knobs}


def _macro(knob: Knob) -> str:
    return "_BO_" + re.sub(r"\W+", "_", knob.name).upper()


def _reference(language: str, params_name: str, knob: Knob) -> str:
    return f"{params_name}[{knob.name!r}]" if language == "python" else _macro(knob)


def _replace_sites(source: str, replacements: list[tuple[LiteralSite, str]],
                   insert_at: int) -> tuple[str, int]:
    """Apply replacements from the end; returns the new text and the shifted insert offset."""
    text = source
    shift = 0
    for site, new in sorted(replacements, key=lambda r: r[0].start, reverse=True):
        text = text[:site.start] + new + text[site.end:]
        if site.end <= insert_at:
            shift += len(new) - (site.end - site.start)
    return text, insert_at + shift


def _compiles(source: str) -> bool:
    try:
        compile(source, "<tuned>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def parameterise(source: str, language: str, knobs: list[Knob]) -> ParameterisedProgram:
    """Rewrite ``source`` around ``knobs``. Knobs whose literal cannot be located (B.9
    validation) or, in Python, whose replacement would not compile, are dropped with a reason;
    raises ValueError when a Python program does not parse at all."""
    name = as_language(language).name
    sites = literal_sites(source, name)
    dropped: dict[str, str] = {}
    located: list[tuple[Knob, LiteralSite]] = []
    names: set[str] = set()
    for knob in knobs:
        found = locate(knob, sites)
        if isinstance(found, str):
            dropped[knob.name] = found
        elif knob.name in names:
            dropped[knob.name] = "duplicate knob name"
        elif any(found.start == site.start for _, site in located):
            dropped[knob.name] = f"literal {knob.source_literal!r} is already another knob"
        else:
            names.add(knob.name)
            located.append((knob, found))
    if name == "python":
        insert_at = _python_insert_offset(source)
        params_name = "_TUNED_PARAMS" if re.search(r"\bPARAMS\b", source) else "PARAMS"
    else:
        insert_at, params_name = _brace_insert_offset(source), ""

    def build(pairs: list[tuple[Knob, LiteralSite]]) -> ParameterisedProgram:
        body, offset = _replace_sites(
            source, [(site, _reference(name, params_name, knob)) for knob, site in pairs],
            insert_at)
        return ParameterisedProgram(name, tuple(k for k, _ in pairs), body, offset, params_name,
                                    dropped)

    program = build(located)
    if name == "python" and not _compiles(program.render()):
        kept = []
        for knob, site in located:
            if _compiles(build([(knob, site)]).render()):
                kept.append((knob, site))
            else:
                dropped[knob.name] = "replacing the literal by a parameter breaks the syntax"
        program = build(kept)
    return program


def substitute(source: str, language: str, knobs: tuple[Knob, ...] | list[Knob],
               values: Mapping[str, float]) -> str:
    """``source`` with each knob's literal replaced by its value, layout otherwise unchanged:
    the tuned program in the shape the search knows (no parameter block)."""
    sites = literal_sites(source, as_language(language).name)
    replacements = []
    for knob in knobs:
        found = locate(knob, sites)
        if isinstance(found, LiteralSite) and knob.name in values:
            replacements.append((found, format_value(values[knob.name], knob)))
    return _replace_sites(source, replacements, 0)[0]
