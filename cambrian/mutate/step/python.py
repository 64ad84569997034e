"""An improvement step wired in by the framework, its score and move written by the model (Python).

Asked to build a local search "into the program", the 1.5B model writes the method as a new
function the program never calls (every strategy child of the tour in ``benchmarks/discovery.py``
did this); asked to write the search step itself, it wrote the loop or its helpers, never both
(benchmarks/results/discovery/after-step). An ``improve_step`` proposal therefore splits the work
(seed 004 §9, decomposition): the framework renames the entry function ``initial_<entry>``,
defines ``<entry>`` to pass what it built through ``improve_<entry>``, a hill-climbing loop it
writes, and gives the loop two stubs: ``score_<entry>`` (how good a solution is; a constant) and
``change_<entry>`` (a copy with one small change; the same solution). A proposal has the model
write one of them, each a small, clear contract: the score while it is the stub, then the move
(asked for both at once, the 1.5B wrote one and left the other a stub). With a stub the loop
changes nothing, so the scaffold behaves like the parent and a child's gain is the model's score
and move; the loop stops after ``STEP_SECONDS`` or ``PATIENCE`` changes in a row that were no
better. A move that raises is no change (the 1.5B's 2-opt drew an empty range when its first
index was the tour's last), unless it never once made a change. A change must gain more than
rounding does: a move that only reorders a solution (the 1.5B swapped two circles) changes a
sum in its last bit, and taking that as a gain once kept a swap that had broken the packing.

The entry function is the block's top-level function that the code outside the blocks calls,
or else the only one no other block function calls. Entries with ``*args``, keyword-only
parameters, decorators or recursion are left alone.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

import numpy as np

from cambrian.core.python_ast import parse_python
from cambrian.mutate.required_names import loaded_names
from cambrian.mutate.unreached import in_blocks, unreached_functions, without_functions
from cambrian.task.blocks import BlockError, EvolveRegions, parse_regions

BUILD_PREFIX = "initial_"
STEP_PREFIX = "improve_"
SCORE_PREFIX = "score_"
CHANGE_PREFIX = "change_"
STEP_SECONDS = 5
PATIENCE = 5000  # changes in a row that were no better before the loop gives up
MOVE_SHARE = 0.7  # of the proposals to a step whose score and move are both written
SOLUTION_NAMES = ("solution", "current_solution", "built_solution")
HELPER_SUMMARY_CHARS = 240


@dataclass(frozen=True)
class Scaffold:
    source: str  # the parent with the step wired in and without the functions nothing runs
    entry: str  # the function the evaluator runs
    step: str  # improve_<entry>: the framework's hill-climbing loop
    inputs: tuple[str, ...]  # the entry's parameters
    solution: tuple[str, ...]  # what the build returns, as the step's last parameters
    stubs: frozenset[str] = frozenset()  # the model's functions that are still the stubs
    language: str = "python"  # cpp.py wires C++ programs
    given: frozenset[str] = frozenset()  # the task's own functions (its score): never asked for
    signature: str = ""  # the entry's parameters as written (defaults kept); "": ``inputs``

    @property
    def entry_parameters(self) -> str:
        """The parameter list of the entry's definition: a caller that relies on a default
        (OpenEvolve's ``search_algorithm(iterations=1000, ...)``) still can."""
        return self.signature or ", ".join(self.inputs)

    @property
    def parameters(self) -> tuple[str, ...]:
        return (*self.inputs, *self.solution)

    @property
    def score(self) -> str:  # how good a solution is: the model writes it
        return SCORE_PREFIX + self.entry

    @property
    def change(self) -> str:  # one small change of a solution: the model writes it
        return CHANGE_PREFIX + self.entry

    @property
    def written_by_model(self) -> tuple[str, str]:
        return (self.score, self.change)

    def to_write(self, rng: np.random.Generator) -> str:
        """The function a proposal asks for: the score while it is a stub, then the move,
        and once both are written the move mostly (a score can be wrong too, unless the task
        gave it)."""
        if self.score in self.stubs:
            return self.score
        if self.change in self.stubs or self.score in self.given or rng.random() < MOVE_SHARE:
            return self.change
        return self.score


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def _loaded(nodes: list[ast.stmt]) -> set[str]:
    return set().union(*(loaded_names(node) for node in nodes))


def _parsed(source: str) -> tuple[ast.Module, EvolveRegions] | None:
    try:
        return parse_python(source), parse_regions(source)
    except (SyntaxError, BlockError):
        return None


def _entry(tree: ast.Module, regions: EvolveRegions, preferred: str | None = None) -> str | None:
    """The entry: ``preferred`` (the initial program's, which the evaluator runs) while the
    blocks define it, else the one function of the blocks the code outside calls, else the one
    no other function of the blocks calls."""
    in_block = {name: node for name, node in _functions(tree).items()
                if in_blocks(node, regions)}
    if preferred is not None and preferred in in_block:
        return preferred
    outside = [statement for statement in tree.body if not in_blocks(statement, regions)]
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


def scaffold(source: str, entry: str | None = None) -> Scaffold | None:
    """``source`` with an improvement step after its entry function (``entry`` when the
    program defines it: a parent whose model added a wrapper nothing calls keeps the entry the
    evaluator runs); None when there is no entry function it can be wired to."""
    parsed = _parsed(source)
    return _scaffold(source, *parsed, preferred=entry) if parsed else None


def _scaffold(source: str, tree: ast.Module, regions: EvolveRegions,
              preferred: str | None = None) -> Scaffold | None:
    entry = _entry(tree, regions, preferred)
    if entry is None or entry.startswith((BUILD_PREFIX, STEP_PREFIX)):
        return None
    leftovers = unreached_functions(tree, regions, entry)
    if leftovers:  # the model copies what it sees, broken leftovers too
        source = without_functions(source, leftovers)
        tree, regions = parse_python(source), parse_regions(source)
    functions = _functions(tree)
    node = functions[entry]
    inputs = _parameters(node)
    if inputs is None or entry in _loaded(node.body):
        return None
    step, build = STEP_PREFIX + entry, BUILD_PREFIX + entry
    score, change = SCORE_PREFIX + entry, CHANGE_PREFIX + entry
    if step in functions:
        existing = _parameters(functions[step])
        if not existing or existing[:len(inputs)] != inputs or len(existing) == len(inputs) \
                or score not in functions or change not in functions:
            return None
        solution = existing[len(inputs):]
        stubs = frozenset(name for name, stub in ((score, _is_score_stub),
                                                  (change, _is_change_stub))
                          if stub(functions[name], solution))
        return Scaffold(source, entry, step, inputs, solution, stubs,
                        signature=ast.unparse(node.args))
    if {build, score, change} & set(functions):
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
    signature = ast.unparse(node.args)
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    parameters = ", ".join((*inputs, *solution))
    listed = " and ".join(f"`{name}`" for name in solution)
    many = len(solution) > 1
    given = (", ".join(inputs) + ", " if inputs else "") + ("*" if many else "")
    wrapper = [
        "",
        "",
        f"def {entry}({signature}){returns}:",
        *docstring,
        f"    {solved} = {build}({arguments})",
        f"    return {step}({parameters})",
        "",
        "",
        f"def {step}({parameters}):",
        f'    """Hill climbing from what `{build}` built: keep a change from',
        f"    `{change}` when `{score}` rates it higher;",
        f'    stop after {STEP_SECONDS} s or {PATIENCE} changes in a row that were no better."""',
        "    import copy",
        "    import time",
        "",
        "    def same_form(new, old):  # a change keeps the solution's shape and size",
        '        if hasattr(old, "shape"):',
        '            return getattr(new, "shape", None) == old.shape',
        '        return not hasattr(old, "__len__") or hasattr(new, "__len__") and len(new) == len(old)',
        "",
        f"    best = {'(' + solved + ')' if many else solved}",
        f"    best_score = {score}({given}best)",
        "    started, failed, moved, move_error = time.time(), 0, 0, None",
        f"    while time.time() - started < {STEP_SECONDS} and failed < {PATIENCE}:",
        "        trial = copy.deepcopy(best)  # the move may change its copy in place",
        "        try:",
        f"            changed = {change}({given}trial)",
        "        except Exception as error:  # a move may fail on a rare draw: no change then",
        "            failed, move_error = failed + 1, error",
        "            continue",
        "        moved += 1",
        "        candidate = trial if changed is None else changed",
        (f"        if not isinstance(candidate, (tuple, list)) or len(candidate) != {len(solution)} \\\n"
         "                or not all(map(same_form, candidate, best)):" if many else
         "        if not same_form(candidate, best):"),
        "            failed += 1",
        "            continue",
        f"        candidate_score = {score}({given}candidate)",
        "        if candidate_score > best_score + 1e-9 * max(1.0, abs(best_score)):  # not rounding",
        "            best, best_score, failed = candidate, candidate_score, 0",
        "        else:",
        "            failed += 1",
        "    if moved == 0 and move_error is not None:",
        "        raise move_error  # it never once made a change",
        "    return best",
        "",
        "",
        f"def {score}({parameters}):",
        f'    """How good {listed} {"are" if many else "is"}: higher is better."""',
        "    return 0.0",
        "",
        "",
        f"def {change}({parameters}):",
        f'    """A copy of {listed} with one small random change."""',
        f"    return {solved}",
    ]
    end = node.end_lineno or node.lineno
    lines[end:end] = wrapper
    if first.lineno > node.lineno and (node.args.defaults or any(node.args.kw_defaults)):
        # The wrapper holds the defaults; the build always gets every input from it, and a
        # default left here would be one a tuning edit changes to no effect.
        bare = copy.copy(node.args)
        bare.defaults, bare.kw_defaults = [], [None] * len(node.args.kwonlyargs)
        lines[header:first.lineno - 1] = [f"def {build}({ast.unparse(bare)}){returns}:"]
    return Scaffold("\n".join(lines), entry, step, inputs, solution, frozenset((score, change)),
                    signature=signature)


def _returned(node: ast.FunctionDef) -> ast.expr | None:
    """What a function that only returns (after its docstring) returns."""
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    only = body[0] if len(body) == 1 else None
    return only.value if isinstance(only, ast.Return) else None


def _is_score_stub(node: ast.FunctionDef, solution: tuple[str, ...]) -> bool:
    value = _returned(node)
    return isinstance(value, ast.Constant) and isinstance(value.value, (int, float))


def _is_change_stub(node: ast.FunctionDef, solution: tuple[str, ...]) -> bool:
    value = _returned(node)
    items = value.elts if isinstance(value, ast.Tuple) else [value]
    return [item.id if isinstance(item, ast.Name) else None for item in items] == list(solution)


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
    skipped = (scaffold_.entry, scaffold_.step, BUILD_PREFIX + scaffold_.entry,
               *scaffold_.written_by_model)
    helpers = []
    for name, node in functions.items():
        if name in skipped or name not in reached or not in_blocks(node, regions):
            continue
        paragraph = " ".join((ast.get_docstring(node) or "").split())
        sentence = paragraph.split(". ")[0].rstrip(".")
        if len(sentence) > HELPER_SUMMARY_CHARS:
            sentence = sentence[:HELPER_SUMMARY_CHARS].rsplit(" ", 1)[0] + "..."
        helpers.append(f"`{_signature(node)}`" + (f": {sentence}" if sentence else ""))
    return helpers


def move_outline(scaffold_: Scaffold) -> str:
    """The form of a move, its change and recomputation left to the model (the ``...``): asked
    for "a new solution of the same form", the 1.5B returned a one-row array for 26 centers
    (with or without a commented outline), or swapped rows in place and returned nothing
    (benchmarks/results/discovery/after-moves, after-outline, after-followup). A solution of
    several parts is changed in its first part's element ``i``, the rest recomputed; a single
    one (a tour) may need more than one element changed, so its change is only a comment."""
    first, rest = scaffold_.solution[0], scaffold_.solution[1:]
    change = (f"    {first}[i] = ...  # {first}[i] changed as the change says" if rest
              else f"    # change {first} at i here, as the change says")
    return "\n".join([
        f"def {scaffold_.change}({', '.join(scaffold_.parameters)}):",
        "    import random",
        f"    i = random.randrange(len({first}))",
        change,
        *(f"    {name} = ...  # {name} recomputed from the changed {first}" for name in rest),
        f"    return {', '.join(scaffold_.solution)}",
    ])


def step_instruction(scaffold_: Scaffold, function: str, move: str) -> str:
    """The task of an ``improve_step`` proposal: write ``function``, the step's score or its
    move (making a change of the kind ``move``)."""
    parameters = ", ".join(scaffold_.parameters)
    solved = ", ".join(scaffold_.solution)
    form = (f"tuple `({solved})`" if len(scaffold_.solution) > 1 else f"`{solved}`")
    helpers = callable_helpers(scaffold_)
    if function == scaffold_.score:
        contract = (f"the number the problem statement asks to maximise, computed from `{solved}` "
                    "(minus that number when it asks to minimise one): higher must mean better. "
                    "Compute it directly; do not check validity here, the change keeps the "
                    "result valid. It must not change its arguments.")
    else:
        contract = (f"a new {form} of exactly the same form (same types, shapes and "
                    "constraints) with one small random change, still valid as the problem "
                    "requires: after changing a part, recompute what depends on it (with the "
                    "program's functions below where they do that). Its arguments are a copy "
                    "it may change in place; return the changed solution. The "
                    f"change: {move}\nIts outline, to complete:\n```python\n"
                    f"{move_outline(scaffold_)}\n```")
    return step_task(scaffold_, function, f"{function}({parameters})", contract, helpers,
                     "thousands of times")


def step_task(scaffold_: Scaffold, function: str, signature: str, contract: str,
              helpers: list[str], how_often: str) -> str:
    """The task of a step proposal around one function's ``contract``, in any language."""
    return (
        f"`{scaffold_.entry}` improves what `{BUILD_PREFIX}{scaffold_.entry}` built with the "
        f"hill-climbing loop `{scaffold_.step}`: it keeps a change made by "
        f"`{scaffold_.change}` when `{scaffold_.score}` rates it higher. Write "
        f"`{signature}`: {contract}\n"
        + ("Functions of the program it can call:\n" + "\n".join(f"- {h}" for h in helpers)
           + "\n" if helpers else "")
        + f"Keep it fast: the loop calls it {how_often}. Reply with `{function}` "
        "complete, and leave the other functions as they are."
    )


def _returns_a_value(node: ast.FunctionDef) -> bool:
    """Whether the function itself (not a function nested in it) returns a value."""
    frontier: list[ast.AST] = list(node.body)
    while frontier:
        current = frontier.pop()
        if isinstance(current, ast.Return) and current.value is not None:
            return True
        if not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                    ast.ClassDef)):
            frontier.extend(ast.iter_child_nodes(current))
    return False


def step_contract_error(source: str, entry: str | None = None) -> str:
    """Why a program with an improvement step breaks the step's contract before it runs: a
    score that returns nothing or never reads the solution; "" when it keeps it or has no
    step. A move that returns nothing is kept: the loop hands it a copy and takes that copy as
    changed in place (the 1.5B's moves swapped in place and returned None, in two runs of
    benchmarks/results/discovery/after-followup). ``entry`` as in ``scaffold``."""
    parsed = _parsed(source)
    entry = _entry(*parsed, entry) if parsed else None
    functions = _functions(parsed[0]) if parsed else {}
    if parsed is None or entry is None or STEP_PREFIX + entry not in functions:
        return ""  # no step wired in: nothing to check (and no scaffold to build)
    wired = _scaffold(source, *parsed, preferred=entry)
    if wired is None:
        return ""
    if not _returns_a_value(functions[wired.score]):
        return (f"`{wired.score}` returns nothing, so the loop `{wired.step}` fails on it; it "
                "must return the number")
    if wired.score not in wired.stubs \
            and not set(wired.solution) & loaded_names(functions[wired.score]):
        return unread_solution_message(wired)
    return ""


def unread_solution_message(wired: Scaffold) -> str:
    """A score that never reads the solution rates every change the same, so the loop keeps
    none (the 1.5B copied the contest's greedy into its score, returning 0 whatever the route;
    benchmarks/results/discovery/cpp-step-outline)."""
    solved = " and ".join(f"`{name}`" for name in wired.solution)
    return (f"`{wired.score}` never reads {solved}, so it rates every change the same and the "
            f"loop keeps none; compute the number from {solved}, which the loop hands it")


def _function_text(source: str, name: str) -> str | None:
    parsed = _parsed(source)
    node = _functions(parsed[0]).get(name) if parsed else None
    return ast.unparse(node) if node is not None else None


def unwritten_step_error(parent: str, child: str, function: str) -> str:
    """Why the child of an ``improve_step`` proposal that asked for ``function`` cannot be used
    when it does not change that function (seen: a reply that rewrote a leftover helper of a
    similar name instead and unwired the step); "" when it does."""
    written = _function_text(child, function)
    if written is not None and written != _function_text(parent, function):
        return ""
    return unwritten_message(function)


def unwritten_message(function: str) -> str:
    return (f"the reply does not write `{function}`, the function asked for; reply with "
            f"`{function}` complete and leave the rest of the program as it is")
