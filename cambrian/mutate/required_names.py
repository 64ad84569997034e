"""Keep full rewrites from silently deleting what the fixed code still needs (Python).

Small models asked to rewrite an EVOLVE-BLOCK often return only the function they changed. If
the code outside the blocks calls a name the block used to define (``run_packing`` calling
``construct_packing``), the child would fail at run time and waste an evaluation. Instead, the
parent's definitions of such names are carried over into the child, and the repair is noted.
"""

from __future__ import annotations

import ast

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


def missing_required_definitions(parent: str, child: str) -> list[str]:
    """Names the parent's blocks define, the fixed code uses, and the child no longer defines."""
    try:
        parent_tree, child_tree = ast.parse(parent), ast.parse(child)
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
    return sorted((parent_defined & used_outside) - child_defined)


def restore_definitions(parent: str, child: str, names: list[str]) -> str:
    """``child`` with the parent's definitions of ``names`` appended to its last evolve block."""
    tree = ast.parse(parent)
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
