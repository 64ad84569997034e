"""A Python program's normal form: two programs with the same normal form do the same thing, as
far as the code itself can tell.

The form is the abstract syntax tree (so comments, layout, parentheses and quoting are gone)
with docstrings dropped and each function's own local variables (and each lambda's parameters) renamed by the order in which
the function first binds them. What is kept as written: module-level names (the evaluator
imports them), attribute names, parameters (a caller may pass them by keyword), and names a
function declares ``global``. So a proposal that only renamed local variables, reformatted the
code or rewrote its comments and docstrings has its parent's normal form; any other change to
what runs (a constant, an operator, a call) gives another one.

Used by the novelty filter (``search/novelty.py``) as an exact test before it asks an LLM judge.
"""

from __future__ import annotations

import ast
import hashlib

from cambrian.core.python_ast import parse_python

__all__ = ["normal_form", "normal_hash"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _is_docstring(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def _drop_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and _is_docstring(body[0]):
                node.body = body[1:] or [ast.Pass()]


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, not those of the functions or classes it defines (their
    names, decorators and defaults are its own)."""
    found: list[ast.AST] = []
    body = scope.body if isinstance(scope.body, list) else [scope.body]
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop(0)
        found.append(node)
        if isinstance(node, (*_SCOPES, ast.ClassDef)):
            pending.extend(getattr(node, "decorator_list", []))
            if not isinstance(node, ast.ClassDef):
                pending.extend(d for d in (*node.args.defaults, *node.args.kw_defaults) if d)
            else:
                pending.extend(node.bases)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found


def _locals_of(scope: ast.AST) -> list[str]:
    """The names a function binds itself, in the order it first binds them (parameters and
    names it declares global or nonlocal excluded)."""
    own = _own_nodes(scope)
    declared = {name for node in own if isinstance(node, (ast.Global, ast.Nonlocal))
                for name in node.names}
    params = (set() if isinstance(scope, ast.Lambda)  # a lambda's are not called by keyword
              else {arg.arg for arg in ast.walk(scope.args) if isinstance(arg, ast.arg)})
    names: list[str] = [arg.arg for arg in ast.walk(scope.args)
                        if isinstance(arg, ast.arg) and arg.arg not in params]
    for node in own:
        bound: str | None = None
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound = node.id
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = node.name
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound = node.name
        elif isinstance(node, ast.alias) and (node.asname or "." not in node.name):
            bound = node.asname or node.name
        if bound and bound not in declared and bound not in params and bound not in names:
            names.append(bound)
    return names


class _Renamer(ast.NodeTransformer):
    def __init__(self) -> None:
        self.scopes: list[dict[str, str]] = []
        self.count = 0

    def _lookup(self, name: str) -> str:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return name

    def _enter(self, node: ast.AST) -> ast.AST:
        mapping: dict[str, str] = {}
        for name in _locals_of(node):
            mapping[name] = f"·{self.count}"  # not an identifier: never a real name
            self.count += 1
        self.scopes.append(mapping)
        node = self.generic_visit(node)
        self.scopes.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._lookup(node.name)  # its name belongs to the enclosing scope
        return self._enter(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        node.name = self._lookup(node.name)
        return self._enter(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self._lookup(node.name)
        return self.generic_visit(node)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return self._enter(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self._lookup(node.id)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        if node.name:
            node.name = self._lookup(node.name)
        return self.generic_visit(node)

    def visit_alias(self, node: ast.alias) -> ast.AST:
        if node.asname or "." not in node.name:  # ``import a.b`` binds ``a``: kept as written
            bound = node.asname or node.name
            renamed = self._lookup(bound)
            if renamed != bound:
                node.asname = renamed
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._lookup(node.arg)  # a lambda's parameter; a function's are not renamed
        node.annotation = node.annotation and self.visit(node.annotation)
        return node


def normal_form(source: str) -> str | None:
    """The normal form of Python ``source``, or None when it does not parse."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    _drop_docstrings(tree)
    tree = _Renamer().visit(tree)
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def normal_hash(source: str) -> str | None:
    form = normal_form(source)
    return None if form is None else hashlib.sha256(form.encode()).hexdigest()[:20]
