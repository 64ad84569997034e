"""Locate function definitions in source code, as whole-line spans.

Python uses :mod:`ast` (decorators are part of a definition; classes count too). Brace
languages use the signature before a top-level ``{`` and brace matching on masked code (see
:mod:`cambrian.lang.code_mask`); only top-level functions are found there, not methods
inside ``impl``/``class``/``namespace`` bodies.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable

from cambrian.core.python_ast import parse_python
from cambrian.lang.code_mask import mask_code, mask_style
from cambrian.lang.language import Definition, Language

__all__ = ["Definition", "brace_parser", "code_outside", "find_definitions", "python_definitions",
           "supports_functions"]

_PYTHON_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

_C_CALLABLE = re.compile(
    r"(?<![\w:~])(operator\s*(?:\(\)|\[\]|[^\s\w(]+)|~?[A-Za-z_]\w*(?:\s*::\s*~?[A-Za-z_]\w*)*)\s*\("
)
_C_NOT_A_NAME = frozenset(
    ["if", "for", "while", "switch", "catch", "return", "sizeof", "alignof", "decltype", "__attribute__", "__declspec", "alignas", "noexcept", "throw", "static_assert", "requires", "asm", "__asm__", "defined"]
)
_NESTED_GROUPS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|<[^<>]*>")
_OPERATOR_TOKEN = re.compile(r"operator\s*\S+")
_ASSIGNMENT = re.compile(r"(?<![=!<>])=(?!=)")
_RUST_FN = re.compile(r"\bfn\s+([A-Za-z_]\w*)")
_GO_FUNC = re.compile(r"^[ \t]*func\s*(?:\([^)]*\)\s*)?([A-Za-z_]\w*)", re.MULTILINE)
_JS_FUNCTION = re.compile(
    r"^[ \t]*(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)",
    re.MULTILINE,
)
_JS_ARROW = re.compile(
    r"^[ \t]*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]*)?=\s*(?:async\s+)?"
    r"(?:function\b[^{]*|(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*(?::[^=]*?)?=>\s*)\Z",
    re.MULTILINE,
)


def supports_functions(language: Language) -> bool:
    return language.definitions is not None


def python_definitions(source: str, top_level_only: bool) -> list[Definition]:
    tree = parse_python(source)
    found: list[Definition] = []

    def visit(node: ast.AST, depth: int) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _PYTHON_DEFINITIONS):
                first = min([decorator.lineno for decorator in child.decorator_list] + [child.lineno])
                found.append(Definition(child.name, first - 1, child.end_lineno or child.lineno, depth))
                if not top_level_only:
                    visit(child, depth + 1)
            elif not top_level_only:
                visit(child, depth)

    visit(tree, 0)
    return found


def _without_nested_groups(text: str) -> str:
    previous = None
    while previous != text:
        previous, text = text, _NESTED_GROUPS.sub(" ", text)
    return text


def _c_function(header: str) -> tuple[str, int] | None:
    for match in _C_CALLABLE.finditer(header):
        name = re.sub(r"\s+", "", match.group(1))
        if name.split("::")[-1] in _C_NOT_A_NAME:
            continue
        # "=" outside (), [] and <> means an initializer or lambda; default arguments are inside.
        outer = _without_nested_groups(_OPERATOR_TOKEN.sub(" ", header))
        if _ASSIGNMENT.search(outer):
            return None
        return name, len(header) - len(header.lstrip())
    return None


HeaderMatcher = Callable[[str], "tuple[str, int] | None"]


def c_function(header: str) -> tuple[str, int] | None:
    """(name, offset where the definition starts) when a C/C++ ``header`` opens a function."""
    return _c_function(header)


def rust_function(header: str) -> tuple[str, int] | None:
    match = _RUST_FN.search(header)
    return (match.group(1), len(header) - len(header.lstrip())) if match else None


def go_function(header: str) -> tuple[str, int] | None:
    match = _GO_FUNC.search(header)
    return (match.group(1), match.start()) if match else None


def js_function(header: str) -> tuple[str, int] | None:
    for pattern in (_JS_FUNCTION, _JS_ARROW):
        match = pattern.search(header)
        if match:
            return match.group(1), match.start()
    return None


def brace_parser(masking: str,
                 opens_function: HeaderMatcher) -> Callable[[str, bool], list[Definition]]:
    """A definitions parser for a brace language: the signature before a top-level ``{``
    (``opens_function`` recognises it) and brace matching on code masked in the ``masking``
    style (``code_mask.py``). Only top-level functions are found, whatever ``top_level_only``
    says."""

    def parse(source: str, top_level_only: bool) -> list[Definition]:
        return _brace_definitions(source, masking, opens_function)

    return parse


def _brace_definitions(source: str, masking: str,
                       opens_function: HeaderMatcher) -> list[Definition]:
    masked = mask_style(source, masking)
    newlines = [index for index, char in enumerate(masked) if char == "\n"]

    def line_of(offset: int) -> int:
        return bisect.bisect_left(newlines, offset)

    found: list[Definition] = []
    depth = 0
    segment_start = 0
    pending: tuple[str, int] | None = None
    for index, char in enumerate(masked):
        if char == "{":
            if depth == 0:
                header = masked[segment_start:index]
                function = opens_function(header)
                pending = (function[0], segment_start + function[1]) if function else None
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                if pending is not None:
                    name, start = pending
                    start += len(masked[start:index]) - len(masked[start:index].lstrip())
                    found.append(Definition(name, line_of(start), line_of(index) + 1, 0))
                pending = None
                segment_start = index + 1
        elif char == ";" and depth == 0:
            segment_start = index + 1
    return found


def find_definitions(source: str, language: Language, *, top_level_only: bool) -> list[Definition]:
    """Function (and, in Python, class) definitions of ``source``, in source order.

    Raises ``SyntaxError`` for code its language's parser cannot parse, ``ValueError`` for a
    language without a definitions parser."""
    if language.definitions is None:
        raise ValueError(f"no function definitions parser for {language.name}")
    return language.definitions(source, top_level_only)


def code_outside(source: str, language: Language, definitions: list[Definition]) -> list[int]:
    """0-based lines holding code that belongs to no definition (imports, globals, prose...)."""
    covered = {line for d in definitions for line in range(d.start, d.end)}
    if language.name == "python":
        tree = parse_python(source)
        lines = {
            line
            for statement in tree.body
            if not isinstance(statement, _PYTHON_DEFINITIONS)
            for line in range(statement.lineno - 1, statement.end_lineno or statement.lineno)
        }
        return sorted(lines - covered)
    raw_lines = source.split("\n")
    masked_lines = mask_code(source, language).split("\n")
    return [
        index
        for index, (raw, masked) in enumerate(zip(raw_lines, masked_lines))
        if index not in covered and (masked.strip() or raw.lstrip().startswith("#"))
    ]
