"""Refuse Python children that use a name nothing defines, before an evaluation is spent.

A small model often calls helpers it never writes: the loop of an improvement step calling
``score`` and ``change`` with neither defined, a variable of the parent's code it removed
(measured in ``benchmarks/discovery.py``: such children fail at run time with a NameError). The
names are found in the syntax tree (a name loaded somewhere that the program binds nowhere: no
assignment, definition, parameter or import at any level), so a name defined in another scope is
never reported; the refusal goes back to the model, which can still write them.
"""

from __future__ import annotations

import ast
import builtins

from cambrian.core.python_ast import parse_python
from cambrian.mutate.required_names import bound_anywhere, loaded_names

MODULE_NAMES = frozenset({"__name__", "__file__", "__doc__", "__builtins__", "__spec__",
                          "__loader__", "__package__", "__annotations__"})


def _unbound(tree: ast.Module) -> set[str]:
    if any(isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
           for node in ast.walk(tree)):
        return set()  # a star import may bind anything
    bound = bound_anywhere(tree) | {
        name for node in ast.walk(tree)
        for name in ((node.name,) if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name
                     else (node.rest,) if isinstance(node, ast.MatchMapping) and node.rest
                     else ())}
    return loaded_names(tree) - bound - set(dir(builtins)) - MODULE_NAMES


def undefined_names(parent: str, child: str) -> list[str]:
    """Names ``child`` uses that nothing in it defines, leaving out those the parent used
    undefined too (the evaluator may provide them); sorted. Empty when either does not parse."""
    try:
        child_tree, parent_tree = parse_python(child), parse_python(parent)
    except SyntaxError:
        return []
    return sorted(_unbound(child_tree) - _unbound(parent_tree))


def undefined_names_error(parent: str, child: str) -> str:
    missing = undefined_names(parent, child)
    if not missing:
        return ""
    listed = ", ".join(f"`{name}`" for name in missing)
    return (f"the code uses {listed}, which nothing in the program defines, so it would fail "
            f"with a NameError; define {'it' if len(missing) == 1 else 'them'} in your reply "
            "or use names the program has")
