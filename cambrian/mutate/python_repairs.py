"""Repairs of Python children that nearly work, made before the evaluation a mistake would waste.

Small models often get the change right and the surroundings wrong. Measured with the 1.5B model
(benchmarks/discovery.py), the common cases are:

* a helper the rewritten code still calls is left out (``required_names.restore_all``);
* the function the evaluator calls is renamed (``minimize`` becomes ``genetic_minimize``): when
  the child lost exactly one of its parent's top-level functions and defines exactly one new one,
  the old name is kept as an alias of the new function;
* a standard module is used without its import (``random.random()``): the import is added at the
  top of the first EVOLVE-BLOCK, for the modules in ``KNOWN_MODULES`` only.

Each repair is noted in the child's notes (``repairs``), so the trace tells what the model wrote
and what Cambrian added.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from cambrian.core.python_ast import parse_python
from cambrian.mutate.required_names import bound_anywhere, loaded_names, restore_all
from cambrian.task.blocks import BlockError, block_contents, parse_regions, replace_block_contents

# A name used without a binding, and the import that binds it.
KNOWN_MODULES: dict[str, str] = {
    **{name: f"import {name}" for name in (
        "random", "math", "itertools", "functools", "heapq", "collections", "bisect", "time",
        "statistics", "copy", "operator", "numpy", "scipy")},
    "np": "import numpy as np",
}


def _top_level_functions(tree: ast.Module, lines: set[int] | None = None) -> list[str]:
    return [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (lines is None or node.lineno in lines)]


def _append_to_last_block(source: str, text: str) -> str:
    contents = block_contents(source)
    contents[-1] = contents[-1].rstrip("\n") + "\n\n\n" + text + "\n"
    return replace_block_contents(source, contents)


def _prepend_to_first_block(source: str, text: str) -> str:
    contents = block_contents(source)
    contents[0] = text + "\n" + contents[0]
    return replace_block_contents(source, contents)


def renamed_function(parent: str, child: str) -> tuple[str, str] | None:
    """(old name, new name) when the child dropped one of the parent's block functions, does
    not call it, and added exactly one function in its place."""
    try:
        parent_tree, child_tree = parse_python(parent), parse_python(child)
        regions = parse_regions(parent)
    except (SyntaxError, BlockError):
        return None
    inside = {line + 1 for block in regions.blocks for line in block.content_lines}
    parent_functions = set(_top_level_functions(parent_tree, inside))
    child_functions = _top_level_functions(child_tree)
    child_bound, child_loaded = bound_anywhere(child_tree), loaded_names(child_tree)
    lost = [name for name in parent_functions
            if name not in child_bound and name not in child_loaded]
    added = [name for name in child_functions if name not in parent_functions]
    if len(lost) == 1 and len(added) == 1:
        return lost[0], added[0]
    return None


def missing_imports(child: str) -> list[str]:
    """Import lines for the known modules the child uses without binding them."""
    try:
        tree = parse_python(child)
    except SyntaxError:
        return []
    unbound = loaded_names(tree) - bound_anywhere(tree) - set(dir(builtins))
    return sorted(KNOWN_MODULES[name] for name in unbound if name in KNOWN_MODULES)


def repair_python_child(parent: str, child: str) -> tuple[str, dict[str, Any]]:
    """The repaired child and what was repaired (empty when nothing was)."""
    repairs: dict[str, Any] = {}
    try:
        imports = missing_imports(child)
        if imports:
            child = _prepend_to_first_block(child, "\n".join(imports))
            repairs["imports"] = imports
        renamed = renamed_function(parent, child)
        if renamed is not None:
            old, new = renamed
            child = _append_to_last_block(child, f"{old} = {new}  # the name the task calls")
            repairs["alias"] = {old: new}
        child, restored = restore_all(parent, child)
        if restored:
            repairs["restored_definitions"] = restored
    except BlockError:
        return child, repairs
    return child, repairs
