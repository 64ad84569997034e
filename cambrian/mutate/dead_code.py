"""Refuse Python children that cannot behave differently from their parent.

A small model asked for an improvement often adds a new function that nothing calls (a
"genetic algorithm" helper next to the unchanged construction code) or edits only comments. The
child then scores exactly what its parent scored: an evaluation spent and a copy added to the
archive. Both are visible in the syntax tree, so such a reply is refused before evaluation with a
message that says what would make it count.
"""

from __future__ import annotations

import ast

from cambrian.core.python_ast import parse_python

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _referenced_names(tree: ast.AST) -> set[str]:
    """Names a module refers to: loaded variables, attributes and string constants (for
    lookups by name such as ``getattr(module, "solve")``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return names


def behaviour_unchanged(parent: str, child: str) -> str:
    """Why ``child`` must behave exactly like ``parent`` (an error for the model), or "".

    Two cases: the syntax trees are equal (only comments or layout changed), or they are equal
    once the top-level functions and classes the child adds and nothing else in it refers to
    are removed. Anything else, a changed docstring included, counts as a change."""
    try:
        parent_tree, child_tree = parse_python(parent), parse_python(child)
    except SyntaxError:
        return ""  # the syntax check reports it
    parent_dump = ast.dump(parent_tree)
    if ast.dump(child_tree) == parent_dump:
        return ("the reply changes only comments or layout, so the program would behave exactly "
                "as before; change the code that runs")
    parent_names = {n.name for n in parent_tree.body if isinstance(n, DEFINITIONS)}
    added = [n for n in child_tree.body
             if isinstance(n, DEFINITIONS) and n.name not in parent_names]
    if not added:
        return ""
    rest = ast.Module(body=[n for n in child_tree.body if n not in added], type_ignores=[])
    unused = [n.name for n in added if n.name not in _referenced_names(rest)]
    if len(unused) != len(added) or ast.dump(rest) != parent_dump:
        return ""
    listed = ", ".join(f"`{name}`" for name in unused)
    return (f"the reply only adds {listed}, which nothing in the program calls, so the program "
            "would behave exactly as before; change the functions the program already runs, or "
            "call the new code from them")
