"""Keep full rewrites from silently deleting what the fixed code still needs (Python).

Small models asked to rewrite an EVOLVE-BLOCK often return only the function they changed. If
the code outside the blocks calls a name the block used to define (``run_packing`` calling
``construct_packing``), or the rewritten code still calls a helper the reply left out
(``construct_packing`` calling ``compute_max_radii``), the child would fail at run time and
waste an evaluation. Instead, the parent's definitions of such names are carried over into the
child, and the repair is noted.
"""

from __future__ import annotations

import ast

from cambrian.core.python_ast import parse_python
from cambrian.task.blocks import block_contents, parse_regions, replace_block_contents


def _top_level_definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    defined: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defined[name.id] = node
    return defined


def _block_lines(source: str) -> set[int]:
    """1-based line numbers inside evolve blocks (markers excluded)."""
    return {line + 1 for block in parse_regions(source).blocks for line in block.content_lines}


def bound_anywhere(tree: ast.Module) -> set[str]:
    """Every name the program binds at any level: assignments, definitions, parameters,
    imports, loop and exception targets."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound


def loaded_names(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def missing_required_definitions(parent: str, child: str) -> list[str]:
    """Names the parent's blocks define that the child no longer defines although the fixed
    code uses them, or the child's own code still uses them (a rewritten function that calls a
    helper the reply left out)."""
    try:
        parent_tree, child_tree = parse_python(parent), parse_python(child)
    except SyntaxError:
        return []
    inside = _block_lines(parent)
    parent_defined = {
        name for name, node in _top_level_definitions(parent_tree).items() if node.lineno in inside
    }
    used_outside = {
        node.id
        for node in ast.walk(parent_tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.lineno not in inside
    }
    child_defined = set(_top_level_definitions(child_tree))
    used_unbound = loaded_names(child_tree) - bound_anywhere(child_tree)
    return sorted((parent_defined & (used_outside | used_unbound)) - child_defined)


def restore_all(parent: str, child: str) -> tuple[str, list[str]]:
    """``child`` with every missing definition restored (a restored helper may itself call
    another one the reply left out), and the names restored."""
    restored: list[str] = []
    for _ in range(5):
        missing = [name for name in missing_required_definitions(parent, child)
                   if name not in restored]
        if not missing:
            break
        child = restore_definitions(parent, child, missing)
        restored += missing
    return child, sorted(restored)


def restore_definitions(parent: str, child: str, names: list[str]) -> str:
    """``child`` with the parent's definitions of ``names`` appended to its last evolve block."""
    tree = parse_python(parent)
    definitions = _top_level_definitions(tree)
    lines = parent.splitlines()
    segments: list[str] = []
    seen: set[int] = set()
    for name in names:
        node = definitions[name]
        if id(node) in seen:
            continue
        seen.add(id(node))
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        segments.append("\n".join(lines[start - 1 : node.end_lineno]))
    contents = block_contents(child)
    last = contents[-1].rstrip("\n")
    contents[-1] = last + "\n\n\n" + "\n\n\n".join(segments) + "\n"
    return replace_block_contents(child, contents)
