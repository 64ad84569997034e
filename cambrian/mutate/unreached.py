"""Functions of the EVOLVE-BLOCKs that nothing runs, and the program without them (Python).

Small models' rewrites leave broken methods beside the code that runs: a strategy child of
circle packing kept a ``random_change`` that returned a one-row array for 26 centers, reached
only from a ``run_packing`` the fixed code redefined after the block. Nothing ran it, so the
child was correct; but the move proposals to its descendants copied it three times
(benchmarks/results/discovery/after-moves, after-outline, after-placeholders). A function is
reached from the entry and from every top-level statement that is not a function definition
(those run at import), through the names it refers to (strings too, for lookups by name); a
name defined twice at top level is the last definition (the one a call at run time finds).
Only definitions inside the blocks are removed: the code outside them is fixed.
"""

from __future__ import annotations

import ast

from cambrian.mutate.dead_code import referenced_names
from cambrian.task.blocks import EvolveRegions

FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)


def in_blocks(node: ast.stmt, regions: EvolveRegions) -> bool:
    """Whether a top-level statement, decorators included, lies wholly inside one block (every
    statement does in a program without markers)."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    last = node.end_lineno or node.lineno
    return not regions.has_markers or regions.block_containing(first - 1, last) is not None


def unreached_functions(tree: ast.Module, regions: EvolveRegions,
                        entry: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The top-level function definitions inside the blocks that no run reaches: not the last
    definition of their name, or not reached from ``entry`` and the module's statements."""
    last: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (*FUNCTION_NODES, ast.ClassDef)):
            last[node.name] = node
    reached: set[int] = set()
    frontier = [entry, *(name for node in tree.body if not isinstance(node, FUNCTION_NODES)
                         for name in referenced_names(node))]
    frontier += [name for node in tree.body
                 if isinstance(node, FUNCTION_NODES) and not in_blocks(node, regions)
                 for name in (node.name, *referenced_names(node))]
    while frontier:
        node = last.get(frontier.pop())
        if node is not None and id(node) not in reached:
            reached.add(id(node))
            frontier.extend(referenced_names(node))
    return [node for node in tree.body
            if isinstance(node, FUNCTION_NODES) and id(node) not in reached
            and in_blocks(node, regions)]


def without_functions(source: str, nodes: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> str:
    """``source`` without the lines of ``nodes`` (decorators included), and without the blank
    lines each leaves behind beyond the two that separate definitions."""
    lines = source.split("\n")
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        end = node.end_lineno or node.lineno
        while end < len(lines) and not lines[end].strip() and first > 0 \
                and not lines[first - 1].strip():
            end += 1  # the blank lines after it, when blank lines come before it too
        del lines[first:end]
    return "\n".join(lines)
