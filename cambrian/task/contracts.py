"""Which of the two evaluator contracts a task's evaluator follows, read from its source (AST),
without running it:

module  (OpenEvolve style): the evaluator file defines `evaluate(program_path)`.
command (ShinkaEvolve style): `python evaluate.py --program_path P --results_dir D`.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Literal

from cambrian.core.python_ast import parse_python

ContractName = Literal["module", "command"]

CONTRACT_SHAPES_HELP = (
    "Cambrian accepts two evaluator shapes: "
    "(module, OpenEvolve style) a top-level `def evaluate(program_path)` that returns a dict "
    "of metrics; or (command, ShinkaEvolve style) a script run as "
    "`python evaluate.py --program_path P --results_dir D` -- i.e. an argparse option "
    "'--results_dir' or a `def main(program_path, results_dir)` -- that writes D/metrics.json "
    "and optionally D/correct.json."
)


def _parameter_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [extra for extra in (arguments.vararg, arguments.kwarg) if extra is not None]
    return [argument.arg for argument in every]


def _top_level_functions(
    tree: ast.Module, name: str
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
    ]


def _has_command_shape(tree: ast.Module) -> bool:
    mentions_option = any(
        isinstance(node, ast.Constant) and node.value in ("--results_dir", "--results-dir")
        for node in ast.walk(tree)
    )
    main_takes_results_dir = any(
        "results_dir" in _parameter_names(function)
        for function in _top_level_functions(tree, "main")
    )
    return mentions_option or main_takes_results_dir


def _has_module_shape(tree: ast.Module) -> bool:
    for function in _top_level_functions(tree, "evaluate"):
        arguments = function.args
        positional = len(arguments.posonlyargs) + len(arguments.args)
        if (positional or arguments.vararg) and "results_dir" not in _parameter_names(function):
            return True
    return False


def detect_contract(evaluator_path: Path) -> ContractName:
    """Decides from the evaluator's AST; a command-line shape wins over an evaluate() helper."""
    source = Path(evaluator_path).read_text(encoding="utf-8")
    try:
        tree = parse_python(source, filename=str(evaluator_path))
    except SyntaxError as error:
        raise ValueError(
            f"cannot parse evaluator {evaluator_path}: {error.msg} (line {error.lineno}). "
            f"{CONTRACT_SHAPES_HELP}"
        ) from None
    if _has_command_shape(tree):
        return "command"
    if _has_module_shape(tree):
        return "module"
    raise ValueError(f"{evaluator_path} matches neither evaluator shape. {CONTRACT_SHAPES_HELP}")
