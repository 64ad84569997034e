"""The improvement step of ``python.py`` for C++ programs (a contest's compiled solution).

The same decomposition: the framework renames the entry function ``initial_<entry>``, defines
``<entry>`` to pass what it built through ``improve_<entry>``, a hill-climbing loop it writes,
and the model writes the loop's two stubs, ``score_<entry>`` and then ``change_<entry>``. What
differs from Python:

- the solution is the entry's return value, typed (``std::string`` for a route); the move takes
  a copy by value and a ``std::mt19937&`` to draw from, so it cannot change the loop's best;
- the loop stops at ``CPU_SECONDS`` of the program's CPU time (``std::clock``, the build's time
  included; a contest case's limit is a CPU-time limit) or ``PATIENCE`` changes in a row that
  were no better (a compiled move is cheap: the Python loop's patience would stop it early);
- the score checks validity: a route is valid only when walking it stays in bounds and ends
  where it must, which the score has to walk anyway, and a move on a route (insert, remove,
  swap a step) easily breaks that. In Python the move keeps the result valid.

The entry is the block's top-level function the code outside the blocks calls (``solve``, called
from ``main``), or else the only one no other block function calls. Entries returning ``void``
or ``auto``, templates, methods and functions with default or unnamed parameters are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cambrian.lang.code_mask import mask_code
from cambrian.lang.definitions import Definition, find_definitions
from cambrian.lang.languages import CPP
from cambrian.mutate.step.python import (
    BUILD_PREFIX,
    CHANGE_PREFIX,
    SCORE_PREFIX,
    SOLUTION_NAMES,
    STEP_PREFIX,
    Scaffold,
    step_task,
    unread_solution_message,
    unwritten_message,
)
from cambrian.task.blocks import BlockError, EvolveRegions, parse_regions

CPU_SECONDS = 0.5
PATIENCE = 200_000
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_PARAMETER_NAME = re.compile(r"([A-Za-z_]\w*)\s*(?:\[\s*\])?\s*$")
_QUALIFIERS = re.compile(r"\s*(?:const|noexcept|override|final)\s*$")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFlL]?"
_INCLUDES = ("algorithm", "cmath", "ctime", "exception", "random")


@dataclass(frozen=True)
class _Function:
    name: str
    returns: str  # the return type as written
    parameters: tuple[str, ...]  # each declaration as written ("const Input& in")
    names: tuple[str, ...]  # the parameters' names
    definition: Definition
    header_end: int  # offset of the body's "{" in the definition's text
    text: str  # the whole definition


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "(<[{"
        depth -= char in ")>]}"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current] if current.strip() or parts else []


def _function(source: str, masked: str, definition: Definition) -> _Function | None:
    lines = source.split("\n")
    masked_lines = masked.split("\n")
    text = "\n".join(lines[definition.start:definition.end])
    masked_text = "\n".join(masked_lines[definition.start:definition.end])
    brace = masked_text.find("{")
    header = " ".join(masked_text[:brace].split())
    opening = header.find("(")
    closing = header.rfind(")")
    if brace < 0 or opening < 0 or closing < opening or "template" in header:
        return None
    if _QUALIFIERS.sub("", header[closing + 1:]).strip():
        return None  # a trailing return type, an initializer list...
    before = header[:opening].rstrip()
    identifiers = _IDENTIFIER.findall(before)
    name = identifiers[-1] if identifiers else ""
    returns = before[:len(before) - len(name)].strip()
    if name != definition.name or returns.endswith("::") or not returns:
        return None
    declared = [" ".join(p.split()) for p in _split_top_level(header[opening + 1:closing])]
    if declared == ["void"]:
        declared = []
    names = [_PARAMETER_NAME.search(p) for p in declared]
    if any(m is None or "=" in p or "..." in p or m.group(1) in ("const", "int", "char")
           for m, p in zip(names, declared, strict=True)):
        return None
    return _Function(name, returns, tuple(declared), tuple(m.group(1) for m in names if m),
                     definition, brace, text)


def _parsed(source: str) -> tuple[list[_Function | None], list[Definition], str,
                                  EvolveRegions] | None:
    try:
        regions = parse_regions(source)
        definitions = find_definitions(source, CPP, top_level_only=True)
    except (BlockError, SyntaxError):
        return None
    masked = mask_code(source, CPP)
    in_block = [d for d in definitions
                if not regions.has_markers or regions.block_containing(d.start, d.end)]
    return [_function(source, masked, d) for d in in_block], in_block, masked, regions


def _calls(masked_text: str, name: str) -> bool:
    return re.search(rf"(?<![\w:.>]){re.escape(name)}\s*\(", masked_text) is not None


def _entry(source: str, preferred: str | None = None
           ) -> tuple[str | None, dict[str, _Function | None], str]:
    parsed = _parsed(source)
    if parsed is None:
        return None, {}, ""
    functions, definitions, masked, regions = parsed
    by_name = {d.name: f for d, f in zip(definitions, functions, strict=True)}
    if preferred is not None and preferred in by_name:
        return preferred, by_name, masked
    masked_lines = masked.split("\n")
    outside = "\n".join(line for index, line in enumerate(masked_lines)
                        if regions.has_markers and not regions.is_mutable(index))
    bodies = {d.name: "\n".join(masked_lines[d.start:d.end]) for d in definitions}
    called_outside = [name for name in by_name if _calls(outside, name)]
    if len(called_outside) == 1:
        return called_outside[0], by_name, masked
    roots = [name for name in by_name
             if not any(_calls(body, name) for other, body in bodies.items() if other != name)]
    return (roots[0] if len(roots) == 1 else None), by_name, masked


def _body(function: _Function) -> str:
    masked = mask_code(function.text, CPP)
    return masked[function.header_end + 1:masked.rfind("}")].strip()


def _is_score_stub(function: _Function) -> bool:
    return re.fullmatch(rf"return\s*\(?\s*{_NUMBER}\s*\)?\s*;", _body(function)) is not None


def _is_change_stub(function: _Function, solution: str) -> bool:
    return re.fullmatch(rf"return\s+{re.escape(solution)}\s*;", _body(function)) is not None


def entry_function(source: str) -> str | None:
    """The function of the EVOLVE-BLOCKs the rest of the program runs."""
    return _entry(source)[0]


def scaffold(source: str, entry: str | None = None) -> Scaffold | None:
    """``source`` with an improvement step after its entry function (``entry`` when the
    program defines it, as in ``python.scaffold``); None when there is no entry function it can
    be wired to."""
    entry, functions, masked = _entry(source, entry)
    node = functions.get(entry) if entry else None
    if entry is None or node is None or entry.startswith((BUILD_PREFIX, STEP_PREFIX)) \
            or node.returns.split()[-1] in ("void", "auto"):
        return None
    step, build = STEP_PREFIX + entry, BUILD_PREFIX + entry
    score, change = SCORE_PREFIX + entry, CHANGE_PREFIX + entry
    if _calls(_body(node), entry):
        return None  # recursive
    if step in functions:
        wired = functions[step]
        scorer, mover = functions.get(score), functions.get(change)
        if wired is None or scorer is None or mover is None \
                or wired.names[:-1] != node.names or len(wired.names) != len(node.names) + 1:
            return None
        solution = wired.names[-1]
        stubs = frozenset(name for name, is_stub in ((score, _is_score_stub(scorer)),
                                                     (change, _is_change_stub(mover, solution)))
                          if is_stub)
        return Scaffold(source, entry, step, node.names, (solution,), stubs, language="cpp")
    if {build, score, change} & set(functions):
        return None
    solution = next(name for name in SOLUTION_NAMES if name not in node.names)
    lines = source.split("\n")
    header_line = node.definition.start + node.text[:node.header_end].count("\n")
    for index in range(node.definition.start, header_line + 1):
        renamed = re.sub(rf"(?<![\w:]){entry}(\s*\()", rf"{build}\1", lines[index], count=1)
        if renamed != lines[index]:
            lines[index] = renamed
            break
    kind = node.returns
    inputs = ", ".join(node.parameters)
    given = ", ".join(node.names) + (", " if node.names else "")
    wrapper = [
        "",
        *(f"#include <{header}>" for header in _INCLUDES),
        "",
        f"// How good `{solution}` is: higher is better.",
        f"double {score}({inputs + ', ' if inputs else ''}const {kind}& {solution}) {{",
        "    return 0.0;",
        "}",
        "",
        f"// A copy of `{solution}` with one small random change.",
        f"{kind} {change}({inputs + ', ' if inputs else ''}{kind} {solution}, std::mt19937& rng) {{",
        f"    return {solution};",
        "}",
        "",
        f"// Hill climbing from what `{build}` built: keep a change from `{change}` when",
        f"// `{score}` rates it higher; stop at {CPU_SECONDS} s of the program's CPU time or "
        f"{PATIENCE} changes",
        "// in a row that were no better.",
        f"{kind} {step}({inputs + ', ' if inputs else ''}{kind} {solution}) {{",
        "    std::mt19937 rng(20261127);",
        f"    double best_score = {score}({given}{solution});",
        "    long failed = 0, moved = 0;",
        "    std::exception_ptr move_error;",
        f"    while (failed < {PATIENCE} && std::clock() < {CPU_SECONDS} * CLOCKS_PER_SEC) {{",
        f"        auto candidate = {solution};",
        "        try {",
        f"            candidate = {change}({given}{solution}, rng);",
        "        } catch (...) {  // a move may fail on a rare draw: no change then",
        "            move_error = std::current_exception();",
        "            ++failed;",
        "            continue;",
        "        }",
        "        ++moved;",
        f"        double candidate_score = {score}({given}candidate);",
        "        if (candidate_score > best_score + 1e-9 * std::max(1.0, std::abs(best_score))) {",
        f"            {solution} = std::move(candidate);",
        "            best_score = candidate_score;",
        "            failed = 0;",
        "        } else {",
        "            ++failed;",
        "        }",
        "    }",
        "    if (moved == 0 && move_error) std::rethrow_exception(move_error);  // it never once"
        " made a change",
        f"    return {solution};",
        "}",
        "",
        f"{kind} {entry}({inputs}) {{",
        f"    {kind} {solution} = {build}({', '.join(node.names)});",
        f"    return {step}({given}{solution});",
        "}",
    ]
    end = node.definition.end
    lines[end:end] = wrapper
    return Scaffold("\n".join(lines), entry, step, node.names, (solution,),
                    frozenset((score, change)), language="cpp")


Functions = dict[str, "_Function | None"]


def _declaration(functions: Functions, name: str) -> str:
    """``name``'s header as written, up to its body."""
    function = functions.get(name)
    return " ".join(function.text[:function.header_end].split()) if function else name


def _comment_above(lines: list[str], start: int) -> str:
    comment: list[str] = []
    index = start - 1
    while index >= 0 and lines[index].strip().startswith("//"):
        comment.insert(0, lines[index].strip().lstrip("/").strip())
        index -= 1
    return " ".join(comment)


def _helpers(scaffold_: Scaffold, functions: Functions, masked: str) -> list[str]:
    """The other block functions the program runs (reached from the entry), each with the first
    sentence of the comment above it."""
    masked_lines = masked.split("\n")
    lines = scaffold_.source.split("\n")
    reached, frontier = set(), [scaffold_.entry]
    while frontier:
        name = frontier.pop()
        function = functions.get(name)
        if function is None or name in reached:
            continue
        reached.add(name)
        body = "\n".join(masked_lines[function.definition.start:function.definition.end])
        frontier.extend(other for other in functions if other != name and _calls(body, other))
    skipped = {scaffold_.entry, scaffold_.step, BUILD_PREFIX + scaffold_.entry,
               *scaffold_.written_by_model}
    helpers = []
    for name, function in functions.items():
        if function is None or name in skipped or name not in reached:
            continue
        sentence = _comment_above(lines, function.definition.start).split(". ")[0].rstrip(".")
        helpers.append(f"`{_declaration(functions, name)}`" + (f": {sentence}" if sentence else ""))
    return helpers


def _is_sequence(declaration: str) -> bool:
    return re.search(r"\b(string|vector|array|deque)\b", declaration) is not None


def _move_outline(scaffold_: Scaffold, functions: Functions) -> str:
    """The form of a C++ move: an index drawn from ``rng`` when the solution is a sequence."""
    solution = scaffold_.solution[0]
    declaration = _declaration(functions, scaffold_.change)
    draw = ([f"    if ({solution}.empty()) return {solution};",
             f"    int i = std::uniform_int_distribution<int>(0, (int){solution}.size() - 1)(rng);",
             f"    // change {solution} at i here, as the change says"]
            if _is_sequence(declaration)
            else [f"    // change {solution} here, as the change says (random numbers from rng)"])
    return "\n".join([f"{declaration} {{", *draw, f"    return {solution};", "}"])


def _score_outline(scaffold_: Scaffold, functions: Functions) -> str:
    """The form of a C++ score: the solution followed item by item when it is a sequence. Asked
    for the score of a route, the 1.5B copied the greedy that builds one, never reading the
    route it was given (benchmarks/results/discovery/cpp-step)."""
    solution = scaffold_.solution[0]
    declaration = _declaration(functions, scaffold_.score)
    reject = "return -1e18 when it breaks a rule"
    follow = ([f"    // declare the state here: as it is before the first item of {solution}",
               "    // (where it starts, what is counted already)",
               f"    for (const auto& item : {solution}) {{",
               "        // apply item as the problem's rules say: update the state, add what it",
               f"        // gains to value, and {reject}",
               "    }",
               f"    // {reject} only the whole {solution} can break (its length, where it ends)"]
              if _is_sequence(declaration)
              else [f"    // compute the value of {solution} as the problem says; {reject}"])
    return "\n".join([f"{declaration} {{", "    double value = 0;", *follow,
                      "    return value;", "}"])


def step_instruction(scaffold_: Scaffold, function: str, move: str) -> str:
    """The task of an ``improve_step`` proposal to a C++ program: write ``function``, the
    step's score or its move (a change of the kind ``move``)."""
    solution = scaffold_.solution[0]
    _, functions, masked = _entry(scaffold_.source)
    declaration = _declaration(functions, function)
    helpers = _helpers(scaffold_, functions, masked)
    if function == scaffold_.score:
        contract = (f"the number the problem statement asks to maximise, computed from "
                    f"`{solution}` (minus that number when it asks to minimise one): higher must "
                    f"mean better. Check `{solution}` as the problem's rules do while you compute "
                    f"it, and return -1e18 when they would reject it (the move may break it). "
                    "It must not change its arguments. Its outline, to complete:\n```cpp\n"
                    f"{_score_outline(scaffold_, functions)}\n```")
    else:
        contract = (f"a copy of `{solution}` (it gets its own copy) with one small random "
                    "change, drawing random numbers from `rng`, still valid as the problem "
                    "requires; return the changed copy. The "
                    f"change: {move}\nIts outline, to complete:\n```cpp\n"
                    f"{_move_outline(scaffold_, functions)}\n```")
    return step_task(scaffold_, function, declaration, contract, helpers,
                     "many thousands of times")


def _function_text(source: str, name: str) -> str | None:
    """``name``'s definition in the blocks with comments and spacing left out (None when it has
    none)."""
    _, functions, _ = _entry(source)
    function = functions.get(name)
    return " ".join(mask_code(function.text, CPP).split()) if function else None


def unwritten_step_error(parent: str, child: str, function: str) -> str:
    """Why the child of an ``improve_step`` proposal that asked for ``function`` cannot be used
    when it does not change that function (comments and spacing aside); "" when it does."""
    written = _function_text(child, function)
    if written is not None and written != _function_text(parent, function):
        return ""
    return unwritten_message(function)


def step_contract_error(source: str, entry: str | None = None) -> str:
    """Why a C++ program's written score breaks the step's contract: it never reads the
    solution; "" when it keeps it or has no step (the compiler finds the rest). ``entry`` as
    in ``scaffold``."""
    wired = scaffold(source, entry)
    if wired is None or wired.score in wired.stubs or wired.step not in source:
        return ""
    _, functions, _ = _entry(source, entry)
    score = functions.get(wired.score)
    if score is None or re.search(rf"\b{wired.solution[0]}\b", _body(score)):
        return ""
    return unread_solution_message(wired)
