"""Running an LLM-written parent-selection strategy (EvoX) without letting it hurt the run.

A strategy is Python source defining ``select(programs, rng) -> int``: ``programs`` is a list of
dicts (``id, fitness, generation, children, island, code_length``), ``rng`` a ``random.Random``,
and the result must be the ``id`` of one of the programs.

* The code runs with a restricted set of builtins and may import only a few pure computational
  modules. This guards against accidents (file or network access, a stray ``exit()``), not
  against deliberate escapes: the strategy comes from the run's own LLM.
* Before a strategy is installed it is validated **in a separate process** (``validate``), which
  is killed at the time limit, so an infinite loop cannot hang the run.
* Once installed, each call runs in-process under a deadline enforced by a trace function
  (``call_with_deadline``), which interrupts pure-Python loops.

This module imports only the standard library: ``validate`` runs this very file as a script.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STRATEGY_FUNCTION = "select"
ALLOWED_MODULES = frozenset({"math", "random", "statistics", "heapq", "bisect", "itertools",
                             "functools", "collections"})
_SAFE_BUILTIN_NAMES = ["abs", "all", "any", "bool", "dict", "divmod", "enumerate", "filter", "float", "frozenset", "int", "isinstance", "len", "list", "map", "max", "min", "pow", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip", "ArithmeticError", "Exception", "IndexError", "KeyError", "LookupError", "TypeError", "ValueError", "ZeroDivisionError", "True", "False", "None"]


class StrategyError(Exception):
    """The strategy failed to load, raised, timed out or returned an invalid id."""


class StrategyTimeout(StrategyError):
    pass


def _restricted_import(name: str, globals: Any = None, locals: Any = None,
                       fromlist: Any = (), level: int = 0) -> Any:
    if level != 0 or name.split(".")[0] not in ALLOWED_MODULES:
        raise ImportError(f"a selection strategy may import only {', '.join(sorted(ALLOWED_MODULES))}")
    return __import__(name, globals, locals, fromlist, level)


def _safe_builtins() -> dict[str, Any]:
    allowed = {name: getattr(builtins, name) for name in _SAFE_BUILTIN_NAMES}
    allowed["__import__"] = _restricted_import
    allowed["__build_class__"] = builtins.__build_class__  # lets a strategy define a helper class
    return allowed


def load_strategy(source: str) -> Callable[..., Any]:
    """Compile ``source`` with restricted builtins and return its ``select`` function."""
    namespace: dict[str, Any] = {"__builtins__": _safe_builtins(), "__name__": "strategy"}
    try:
        exec(compile(source, "<strategy>", "exec"), namespace)
    except Exception as exc:  # noqa: BLE001 - any failure means the strategy is unusable
        raise StrategyError(f"does not load: {type(exc).__name__}: {exc}") from None
    function = namespace.get(STRATEGY_FUNCTION)
    if not callable(function):
        raise StrategyError(f"defines no function `{STRATEGY_FUNCTION}(programs, rng)`")
    return function


def call_with_deadline(function: Callable[..., Any], programs: list[dict[str, Any]], rng: Any,
                       seconds: float) -> int:
    """``function(programs, rng)`` checked for a valid id; raises StrategyError otherwise.

    The deadline is checked on every line the strategy executes (a trace function), so a
    pure-Python infinite loop is interrupted; a single long C call is not.
    """
    deadline = time.monotonic() + seconds

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise StrategyTimeout(f"took longer than {seconds:g}s")
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        chosen = function([dict(p) for p in programs], rng)
    except StrategyError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise StrategyError(f"raised {type(exc).__name__}: {exc}") from None
    finally:
        sys.settrace(previous)
    if isinstance(chosen, bool) or not isinstance(chosen, int):
        raise StrategyError(f"returned {chosen!r} ({type(chosen).__name__}), not a program id")
    if chosen not in {p["id"] for p in programs}:
        raise StrategyError(f"returned id {chosen}, which is not among the programs given")
    return chosen


def check(source: str, archives: list[list[dict[str, Any]]], seeds: list[int],
          call_seconds: float) -> str | None:
    """Every (archive, seed) call must return a valid id: None, or the first problem found."""
    import random

    try:
        function = load_strategy(source)
        for number, archive in enumerate(archives):
            for seed in seeds:
                try:
                    call_with_deadline(function, archive, random.Random(seed), call_seconds)
                except StrategyError as exc:
                    raise StrategyError(f"on test archive {number} ({len(archive)} programs), "
                                        f"seed {seed}: {exc}") from None
    except StrategyError as exc:
        return str(exc)
    return None


async def validate(source: str, archives: list[list[dict[str, Any]]], seeds: list[int], *,
                   timeout_s: float, call_seconds: float) -> str | None:
    """Run :func:`check` in a fresh interpreter, killed after ``timeout_s``."""
    payload = json.dumps({"source": source, "archives": archives, "seeds": seeds,
                          "call_seconds": call_seconds}).encode()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-I", str(Path(__file__).resolve()),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(payload), timeout_s)
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()
        return f"validation did not finish within {timeout_s:g}s (endless loop?)"
    try:
        verdict = json.loads(stdout.decode() or "null")
    except json.JSONDecodeError:
        verdict = None
    if not isinstance(verdict, dict):
        tail = stderr.decode(errors="replace").strip()[-500:]
        return f"validation process failed (exit {process.returncode}): {tail}"
    return verdict.get("error")


def _main() -> None:
    request = json.loads(sys.stdin.read())
    error = check(request["source"], request["archives"], request["seeds"],
                  request["call_seconds"])
    sys.stdout.write(json.dumps({"error": error}))


if __name__ == "__main__":
    _main()
