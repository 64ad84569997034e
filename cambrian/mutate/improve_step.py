"""An improvement step wired in by the framework, written by the model (Python).

Asked to build a local search or annealing "into the program", the 1.5B model writes the method
as a new function and leaves the function the evaluator runs as it was, so the method never runs
(measured in ``benchmarks/discovery.py``: every strategy child of the tour did this). An
``improve_step`` proposal splits the work (seed 004 §9, decomposition): the framework renames the
entry function ``initial_<entry>``, defines ``<entry>`` to pass what it built through
``improve_<entry>``, and gives that step a stub that returns the solution unchanged. The model
then writes one function with a clear contract: take the inputs and the current solution, return
a better one of the same form. The scaffold behaves exactly like the parent, so the parent's
score holds for it; a child whose step is still the stub is refused as unchanged.

The entry function is the block's top-level function that the code outside the blocks calls,
or else the only one no other block function calls. Entries with ``*args``, keyword-only
parameters, decorators or recursion are left alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from cambrian.core.python_ast import parse_python
from cambrian.mutate.required_names import loaded_names
from cambrian.task.blocks import BlockError, EvolveRegions, parse_regions

BUILD_PREFIX = "initial_"
STEP_PREFIX = "improve_"
SOLUTION_NAMES = ("solution", "current_solution", "built_solution")
HELPER_SUMMARY_CHARS = 240


@dataclass(frozen=True)
class Scaffold:
    source: str  # the parent with the step wired in (the parent itself when it already was)
    entry: str  # the function the evaluator runs
    step: str  # the function the model writes: improve_<entry>
    inputs: tuple[str, ...]  # the entry's parameters
    solution: tuple[str, ...]  # what the build returns, as the step's last parameters

    @property
    def parameters(self) -> tuple[str, ...]:
        return (*self.inputs, *self.solution)


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def _in_blocks(node: ast.stmt, regions: EvolveRegions) -> bool:
    return not regions.has_markers or regions.is_mutable(node.lineno - 1)


def _loaded(nodes: list[ast.stmt]) -> set[str]:
    return set().union(*(loaded_names(node) for node in nodes))


def _parsed(source: str) -> tuple[ast.Module, EvolveRegions] | None:
    try:
        return parse_python(source), parse_regions(source)
    except (SyntaxError, BlockError):
        return None


def _entry(tree: ast.Module, regions: EvolveRegions) -> str | None:
    in_block = {name: node for name, node in _functions(tree).items()
                if _in_blocks(node, regions)}
    outside = [statement for statement in tree.body if not _in_blocks(statement, regions)]
    called_outside = [name for name in in_block if name in _loaded(outside)]
    if len(called_outside) == 1:
        return called_outside[0]
    roots = [name for name, node in in_block.items()
             if not any(name in _loaded([other]) for other_name, other in in_block.items()
                        if other_name != name)]
    return roots[0] if len(roots) == 1 else None


def entry_function(source: str) -> str | None:
    """The function of the EVOLVE-BLOCKs the rest of the program (or the evaluator) runs."""
    parsed = _parsed(source)
    return _entry(*parsed) if parsed else None


def _parameters(node: ast.FunctionDef) -> tuple[str, ...] | None:
    arguments = node.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or node.decorator_list:
        return None
    return tuple(a.arg for a in arguments.posonlyargs + arguments.args)


def _returned_names(node: ast.FunctionDef, taken: tuple[str, ...]) -> tuple[str, ...]:
    """The names the entry's final ``return`` gives back (``return centers, radii``), so the
    step's parameters say what the solution is; ``solution`` when they cannot be used."""
    last = node.body[-1]
    value = last.value if isinstance(last, ast.Return) else None
    items = value.elts if isinstance(value, ast.Tuple) else [value]
    names = tuple(item.id for item in items if isinstance(item, ast.Name))
    if names and len(names) == len(items) and len(set(names)) == len(names) \
            and not set(names) & set(taken):
        return names
    return (next(name for name in SOLUTION_NAMES if name not in taken),)


def scaffold(source: str) -> Scaffold | None:
    """``source`` with an improvement step after its entry function; None when there is no
    entry function it can be wired to."""
    parsed = _parsed(source)
    entry = _entry(*parsed) if parsed else None
    if parsed is None or entry is None or entry.startswith((BUILD_PREFIX, STEP_PREFIX)):
        return None
    functions = _functions(parsed[0])
    node = functions[entry]
    inputs = _parameters(node)
    if inputs is None or entry in _loaded(node.body):
        return None
    step, build = STEP_PREFIX + entry, BUILD_PREFIX + entry
    if step in functions:
        existing = _parameters(functions[step])
        if not existing or existing[:len(inputs)] != inputs or len(existing) == len(inputs):
            return None
        return Scaffold(source, entry, step, inputs, existing[len(inputs):])
    if build in functions:
        return None
    solution = _returned_names(node, inputs)
    lines = source.split("\n")
    header = node.lineno - 1
    lines[header] = lines[header].replace(f"def {entry}(", f"def {build}(", 1)
    first = node.body[0]
    has_docstring = ast.get_docstring(node) is not None
    docstring = (lines[first.lineno - 1:first.end_lineno or first.lineno]
                 if has_docstring else [])
    arguments, solved = ", ".join(inputs), ", ".join(solution)
    listed = " and ".join(f"`{name}`" for name in solution)
    wrapper = [
        "",
        "",
        f"def {entry}({arguments}):",
        *docstring,
        f"    {solved} = {build}({arguments})",
        f"    return {step}({', '.join((*inputs, *solution))})",
        "",
        "",
        f"def {step}({', '.join((*inputs, *solution))}):",
        f'    """Return a better {listed} than the ones given,',
        f'    which `{build}` built; of the same form."""',
        f"    return {solved}",
    ]
    end = node.end_lineno or node.lineno
    lines[end:end] = wrapper
    return Scaffold("\n".join(lines), entry, step, inputs, solution)


def _signature(node: ast.FunctionDef) -> str:
    return f"{node.name}({', '.join(a.arg for a in node.args.posonlyargs + node.args.args)})"


def callable_helpers(scaffold_: Scaffold) -> list[str]:
    """The other functions the program runs (reached from the entry; a function nothing calls
    is often a broken leftover), each with its docstring's first sentence: a small model
    otherwise invents its own scoring or repair code beside them."""
    tree, regions = parse_python(scaffold_.source), parse_regions(scaffold_.source)
    functions = _functions(tree)
    reached, frontier = set(), [scaffold_.entry]
    while frontier:
        name = frontier.pop()
        if name in functions and name not in reached:
            reached.add(name)
            frontier.extend(_loaded(functions[name].body))
    skipped = (scaffold_.entry, scaffold_.step, BUILD_PREFIX + scaffold_.entry)
    helpers = []
    for name, node in functions.items():
        if name in skipped or name not in reached or not _in_blocks(node, regions):
            continue
        paragraph = " ".join((ast.get_docstring(node) or "").split())
        sentence = paragraph.split(". ")[0].rstrip(".")
        if len(sentence) > HELPER_SUMMARY_CHARS:
            sentence = sentence[:HELPER_SUMMARY_CHARS].rsplit(" ", 1)[0] + "..."
        helpers.append(f"`{_signature(node)}`" + (f": {sentence}" if sentence else ""))
    return helpers


def loop_shape(scaffold_: Scaffold) -> str:
    """A search loop over the step's own names, for the model to adapt: measured with the 1.5B,
    a method described in words alone came back as a copy of a helper or a changed constant."""
    solved = ", ".join(scaffold_.solution)
    start = f"({solved})" if len(scaffold_.solution) > 1 else solved
    return "\n".join((
        f"def {scaffold_.step}({', '.join(scaffold_.parameters)}):",
        f"    best = {start}",
        "    best_score = score(best)",
        "    start = time.time()",
        "    while time.time() - start < 5:",
        "        candidate = change(best)",
        "        candidate_score = score(candidate)",
        "        if candidate_score > best_score:",
        "            best, best_score = candidate, candidate_score",
        "    return best",
    ))


def step_instruction(scaffold_: Scaffold, method: str) -> str:
    """The task of an ``improve_step`` proposal: write the step with ``method``."""
    signature = f"{scaffold_.step}({', '.join(scaffold_.parameters)})"
    solved = ", ".join(scaffold_.solution)
    helpers = callable_helpers(scaffold_)
    inputs = "its own inputs and " if scaffold_.inputs else ""
    return (
        f"Write the function `{signature}`. `{scaffold_.entry}` calls it with {inputs}"
        f"`{solved}`, what `{BUILD_PREFIX}{scaffold_.entry}` built; it must return a better "
        f"`{solved}` of exactly the same form (same types, shapes and constraints). Use this "
        f"method: {method}\n"
        + ("Functions of the program it can call:\n" + "\n".join(f"- {h}" for h in helpers)
           + "\n" if helpers else "")
        + "A search loop has this shape; adapt it to the method, and write `score` (a number, "
        "higher for a better result as the problem statement measures it, lowest for an "
        "invalid one) and `change` (a copy with one small random change) as helper "
        "functions:\n"
        f"```python\n{loop_shape(scaffold_)}\n```\n"
        "Keep the time bound well within the time limit. Your reply rewrites "
        f"`{scaffold_.step}` completely, with the helper functions it calls."
    )
