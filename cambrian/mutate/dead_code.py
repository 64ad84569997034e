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
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def referenced_names(tree: ast.AST) -> set[str]:
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


def _unreachable_additions(added: list[Definition], rest: ast.Module) -> list[str]:
    """Names of the ``added`` definitions that nothing in ``rest`` (the child without them)
    reaches, directly or through other added definitions."""
    by_name = {node.name: node for node in added}
    frontier, reached = referenced_names(rest), set()
    while frontier:
        name = frontier.pop()
        if name in by_name and name not in reached:
            reached.add(name)
            frontier |= referenced_names(by_name[name])
    return [name for name in by_name if name not in reached]


def behaviour_unchanged(parent: str, child: str, *, new_method_asked: bool = False) -> str:
    """Why ``child`` must behave exactly like ``parent``, or cannot use the method it was asked
    to add (an error for the model), or "".

    Refused: the syntax trees are equal (only comments or layout changed); they are equal once
    the top-level functions and classes the child adds and nothing else in it refers to are
    removed; or, when the proposal asked for a new method (``new_method_asked``), the child adds
    definitions nothing reaches whatever else it changes: the method would never run. Anything
    else, a changed docstring included, counts as a change."""
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
    unused = _unreachable_additions(added, rest)
    listed = ", ".join(f"`{name}`" for name in unused)
    if len(unused) == len(added) and ast.dump(rest) == parent_dump:
        return (f"the reply only adds {listed}, which nothing in the program calls, so the "
                "program would behave exactly as before; change the functions the program "
                "already runs, or call the new code from them")
    if new_method_asked and unused:
        callers = [n.name for n in parent_tree.body
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))][:2]
        where = " or ".join(f"`{name}`" for name in callers) or "the code that runs"
        return (f"the reply defines {listed}, but nothing in the program calls "
                f"{'it' if len(unused) == 1 else 'them'}, so the method would never run; make "
                f"{where} use the new code")
    return ""
