"""One-call helpers in the shape of OpenEvolve's library API, on top of :func:`run_evolution`:

- ``evolve_function(func, test_cases)``: evolve a Python function until it returns the expected
  output for each ``(input, expected)`` case (score: the share of cases passed);
- ``evolve_algorithm(cls, benchmark)``: evolve a class, scored by ``benchmark(instance)``
  (a number, or a dict of metrics with ``combined_score``);
- ``evolve_code(code, evaluator)``: evolve a program's text under an evaluator
  ``f(program_path) -> dict``: :func:`run_evolution` under OpenEvolve's name.

``iterations`` is OpenEvolve's word for ``generations``; every other option of
:func:`run_evolution` (``model``, ``target_score``, ``run_dir``, ``config``...) is accepted.
The evaluators are built here as closures and run contained like any evaluator
(``task/inline.py``): a benchmark defined in a module the evaluation process cannot import is
sent with it by value.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from cambrian.api.inline import EvolutionResult, run_evolution
from cambrian.task.inline import sent_by_value


def _source(obj: Any, what: str) -> str:
    """The source of ``obj``, all of it one EVOLVE-BLOCK (as OpenEvolve's helpers mark it)."""
    from cambrian.lang.languages import language_by_name
    from cambrian.task.blocks import START_TOKEN
    from cambrian.task.inline import with_markers

    try:
        source = textwrap.dedent(inspect.getsource(obj))
        return source if START_TOKEN in source else with_markers(source,
                                                                 language_by_name("python"))
    except (OSError, TypeError) as exc:
        raise TypeError(f"{what} {getattr(obj, '__name__', obj)!r} has no source Cambrian can "
                        f"read ({exc}); define it in a file, or pass its code to evolve_code") \
            from None


def _options(iterations: int | None, options: dict[str, Any]) -> dict[str, Any]:
    if iterations is not None:
        if "generations" in options:
            raise TypeError("give iterations or generations, not both")
        options["generations"] = iterations
    return options


def function_cases_evaluator(name: str, cases: list[tuple[Any, Any]]) -> Callable[[str], dict]:
    """An evaluator calling ``name`` of the program on each case: a tuple input is its
    arguments, anything else the one argument; a case passes when the output equals the
    expected one (floats within 1e-9 relative)."""

    def evaluate(program_path: str) -> dict[str, Any]:
        # Self-contained: it runs in the evaluation process, sent there by value.
        import importlib.util
        import math

        spec = importlib.util.spec_from_file_location("candidate", program_path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        if not hasattr(module, name):
            raise RuntimeError(f"the program no longer defines {name}")
        function = getattr(module, name)
        passed, failures = 0, []
        for given, expected in cases:
            try:
                output = function(*given) if isinstance(given, tuple) else function(given)
            except Exception as exc:  # noqa: BLE001 - a failing case is a failed case
                failures.append(f"{name}{given!r} raised {type(exc).__name__}: {exc}")
                continue
            same = (math.isclose(output, expected, rel_tol=1e-9, abs_tol=1e-12)
                    if isinstance(output, float) and isinstance(expected, (int, float))
                    else output == expected)
            if same:
                passed += 1
            else:
                failures.append(f"{name}({given!r}) returned {output!r}, expected {expected!r}")
        share = passed / len(cases)
        return {"combined_score": share, "tests_passed": passed, "tests_total": len(cases),
                "text_feedback": "\n".join(failures[:5])}

    evaluate.__doc__ = (f"Make `{name}` return the expected output for every test case; the "
                        "score is the share of cases it passes.")
    return evaluate


def evolve_function(func: Callable[..., Any], test_cases: Iterable[tuple[Any, Any]], *,
                    iterations: int | None = None, **options: Any) -> EvolutionResult:
    """Evolve ``func`` (its source) until it passes ``test_cases``, ``(input, expected)``
    pairs (a tuple input is the arguments). Returns the :class:`EvolutionResult`; its
    ``best_code`` defines the evolved function under the same name."""
    cases = [tuple(case) for case in test_cases]
    if not cases or any(len(case) != 2 for case in cases):
        raise ValueError("test_cases must be (input, expected_output) pairs, at least one")
    evaluator = function_cases_evaluator(func.__name__, cases)  # type: ignore[arg-type]
    options.setdefault("name", func.__name__)
    return run_evolution(_source(func, "the function"), evaluator,
                         **_options(iterations, options))


def benchmark_evaluator(name: str, benchmark: Callable[[Any], Any]) -> Callable[[str], dict]:
    """An evaluator making an instance of the program's class ``name`` and scoring it with
    ``benchmark(instance)``: a number is the score, a dict its metrics."""

    def evaluate(program_path: str) -> dict[str, Any]:
        import importlib.util

        spec = importlib.util.spec_from_file_location("candidate", program_path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        if not hasattr(module, name):
            raise RuntimeError(f"the program no longer defines {name}")
        instance = getattr(module, name)()
        result = benchmark(instance)
        if isinstance(result, dict):
            return result
        if isinstance(result, (int, float)) and not isinstance(result, bool):
            return {"combined_score": float(result)}
        raise TypeError(f"the benchmark returned {type(result).__name__}: expected a number "
                        "or a dict of metrics")

    evaluate.__doc__ = (f"Improve the class `{name}`: an instance of it is scored by the "
                        "benchmark (higher is better).")
    return evaluate


def evolve_algorithm(algorithm_class: type, benchmark: Callable[[Any], Any], *,
                     iterations: int | None = None, **options: Any) -> EvolutionResult:
    """Evolve ``algorithm_class`` (its source), each version scored by
    ``benchmark(instance)`` (a number, or a dict with ``combined_score``)."""
    if not isinstance(algorithm_class, type):
        raise TypeError("evolve_algorithm takes a class (evolve_function takes a function)")
    evaluator = benchmark_evaluator(algorithm_class.__name__, benchmark)
    options.setdefault("name", algorithm_class.__name__)
    with sent_by_value(benchmark):
        return run_evolution(_source(algorithm_class, "the class"), evaluator,
                             **_options(iterations, options))


def evolve_code(initial_code: str | Path, evaluator: Callable[[str], Any] | str | Path, *,
                iterations: int | None = None, **options: Any) -> EvolutionResult:
    """Evolve ``initial_code`` under ``evaluator`` (``f(program_path) -> dict``, an evaluator
    file or a task folder): :func:`run_evolution`, with OpenEvolve's ``iterations``."""
    return run_evolution(initial_code, evaluator, **_options(iterations, options))


__all__ = ["benchmark_evaluator", "evolve_algorithm", "evolve_code", "evolve_function",
           "function_cases_evaluator"]
