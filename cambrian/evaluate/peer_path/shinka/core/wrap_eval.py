"""``run_shinka_eval`` with ShinkaEvolve's semantics, written for Cambrian.

It loads the program as a module, calls its experiment function ``num_runs`` times (with
``get_experiment_kwargs(i)``, else ``seed=i+1``), validates each run (``validate_fn -> (ok,
message)``; one invalid run makes the program incorrect, the first message is the error),
aggregates (``aggregate_metrics_fn``, else a count and a preview of the raw results), adds the
mean and standard deviation of the run times, marks a NaN or infinite ``combined_score``
incorrect, pickles ``extra_data`` to ``extra.pkl`` (plots through ``plotting_fn``), and writes
``metrics.json`` and ``correct.json`` into ``results_dir``. Any exception makes the program
incorrect with the default error metrics and the exception's message.

Not provided: ShinkaEvolve's early stopping (``early_stop_method`` bayesian/ci/hybrid). All
``num_runs`` runs then run and ``metrics["early_stop"]`` says so.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pickle
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

DEFAULT_METRICS_ON_ERROR: dict[str, Any] = {
    "combined_score": 0.0,
    "execution_time_mean": 0.0,
    "execution_time_std": 0.0,
    "num_successful_runs": 0,
    "num_valid_runs": 0,
    "num_invalid_runs": 0,
    "all_validation_errors": [],
}


def load_program(program_path: str) -> Any:
    """The program file as a module named ``program``."""
    spec = importlib.util.spec_from_file_location("program", program_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"Could not load spec for module at {program_path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mean_std(values: list[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    try:
        import numpy as np  # ShinkaEvolve's own arithmetic, when available
        return float(np.mean(values)), float(np.std(values))
    except ImportError:
        mean = math.fsum(values) / len(values)
        return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))


def save_json_results(results_dir: str, metrics: dict[str, Any], correct: bool,
                      error: str | None = None) -> None:
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "correct.json"), "w") as handle:
        json.dump({"correct": correct, "error": error}, handle, indent=4)
    with open(os.path.join(results_dir, "metrics.json"), "w") as handle:
        json.dump(metrics, handle, indent=4)


def _one_run(program_path: str, function_name: str, index: int,
             kwargs: dict[str, Any]) -> tuple[int, Any, float]:
    """One run in a worker process (run_workers > 1)."""
    function = getattr(load_program(program_path), function_name)
    started = time.perf_counter()
    result = function(**kwargs)
    return index, result, time.perf_counter() - started


class _Runs:
    """The runs' results, times and validation tally."""

    def __init__(self, validate_fn: Callable[[Any], tuple[bool, str | None]] | None) -> None:
        self.validate_fn = validate_fn
        self.results: list[Any] = []
        self.times: list[float] = []
        self.valid = 0
        self.invalid = 0
        self.errors: list[str] = []
        self.first_error: str | None = None

    def add(self, result: Any, seconds: float) -> None:
        self.results.append(result)
        self.times.append(seconds)
        if self.validate_fn is None:
            return
        ok, message = self.validate_fn(result)
        if ok:
            self.valid += 1
            return
        self.invalid += 1
        if message:
            self.first_error = self.first_error or f"Validation failed: {message}"
            if message not in self.errors:
                self.errors.append(message)


def _kwargs(get_experiment_kwargs: Callable[[int], dict[str, Any]] | None,
            index: int) -> dict[str, Any]:
    return get_experiment_kwargs(index) if get_experiment_kwargs else {"seed": index + 1}


def _run_all(program_path: str, function_name: str, num_runs: int, workers: int,
             get_experiment_kwargs: Callable[[int], dict[str, Any]] | None,
             runs: _Runs) -> None:
    module = load_program(program_path)
    if not hasattr(module, function_name):
        raise AttributeError(
            f"Experiment function '{function_name}' not found in {program_path}")
    if num_runs > 1 and workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(_one_run, program_path, function_name, i,
                                   _kwargs(get_experiment_kwargs, i)) for i in range(num_runs)]
            done = sorted((future.result() for future in futures), key=lambda item: item[0])
        for _index, result, seconds in done:
            runs.add(result, seconds)
        return
    function = getattr(module, function_name)
    for index in range(num_runs):
        print(f"{10 * '='}Running program evaluation {index + 1}/{num_runs}...{10 * '='}")
        started = time.perf_counter()
        result = function(**_kwargs(get_experiment_kwargs, index))
        runs.add(result, time.perf_counter() - started)


def _save_extra(results_dir: str, metrics: dict[str, Any],
                plotting_fn: Callable[[Any], list[Any]] | None) -> None:
    if "extra_data" not in metrics:
        return
    os.makedirs(results_dir, exist_ok=True)
    extra = metrics.pop("extra_data")
    with open(os.path.join(results_dir, "extra.pkl"), "wb") as handle:
        pickle.dump(extra, handle)
    if plotting_fn is None:
        return
    plots = os.path.join(results_dir, "plots")
    os.makedirs(plots, exist_ok=True)
    try:
        import matplotlib.pyplot as plt

        for item, title in plotting_fn(extra):
            if hasattr(item, "savefig"):
                item.savefig(os.path.join(plots, f"{title}.png"), bbox_inches="tight", dpi=150)
                item.savefig(os.path.join(plots, f"{title}.pdf"), bbox_inches="tight")
                plt.close(item)
            else:  # an animation
                item.save(os.path.join(plots, f"{title}.gif"), writer="pillow", fps=30)
    except Exception as error:  # noqa: BLE001 - plots never decide the score
        print(f"Error generating plots: {error}")


def run_shinka_eval(
    program_path: str,
    results_dir: str,
    experiment_fn_name: str,
    num_runs: int,
    get_experiment_kwargs: Callable[[int], dict[str, Any]] | None = None,
    aggregate_metrics_fn: Callable[[list[Any]], dict[str, Any]] | None = None,
    validate_fn: Callable[[Any], tuple[bool, str | None]] | None = None,
    plotting_fn: Callable[[Any], list[Any]] | None = None,
    default_metrics_on_error: dict[str, Any] | None = None,
    early_stop_method: Any = None,
    early_stop_threshold: float | None = None,
    early_stop_score_fn: Callable[[Any], float] | None = None,
    early_stop_kwargs: dict[str, Any] | None = None,
    run_workers: int = 1,
    max_workers_cap: int | None = None,
) -> tuple[dict[str, Any], bool, str | None]:
    """(metrics, correct, first error message); also writes metrics.json and correct.json."""
    if run_workers < 1:
        raise ValueError("run_workers must be >= 1")
    if max_workers_cap is not None and max_workers_cap < 1:
        raise ValueError("max_workers_cap must be >= 1 when provided")
    workers = min(run_workers, max_workers_cap or run_workers, max(num_runs, 1))
    on_error = dict(default_metrics_on_error or DEFAULT_METRICS_ON_ERROR)
    runs = _Runs(validate_fn)
    correct = True
    error: str | None = None
    try:
        _run_all(program_path, experiment_fn_name, num_runs, workers, get_experiment_kwargs,
                 runs)
        if aggregate_metrics_fn:
            metrics = aggregate_metrics_fn(runs.results)
        else:
            metrics = {"num_successful_runs": len(runs.results),
                       "first_run_result_type": (str(type(runs.results[0])) if runs.results
                                                 else "N/A"),
                       "raw_results_preview": str(runs.results[:2]) if runs.results else "N/A"}
        metrics["execution_time_mean"], metrics["execution_time_std"] = _mean_std(runs.times)
        if validate_fn:
            metrics["num_valid_runs"] = runs.valid
            metrics["num_invalid_runs"] = runs.invalid
            metrics["all_validation_errors"] = runs.errors
        if early_stop_method not in (None, "none"):
            metrics["early_stop"] = {
                "method": str(getattr(early_stop_method, "name", early_stop_method)),
                "threshold": early_stop_threshold, "triggered": False,
                "runs_completed": len(runs.results), "runs_requested": num_runs,
                "reason": "early stopping is not provided by Cambrian's shinka helper: "
                          "every run ran"}
        correct, error = runs.invalid == 0, runs.first_error
        if "combined_score" in metrics:
            score = float(metrics["combined_score"])
            if math.isnan(score):
                correct, error = False, error or "combined_score is NaN"
            elif math.isinf(score):
                correct, error = False, error or f"combined_score is inf ({score})"
    except Exception as exc:  # noqa: BLE001 - ShinkaEvolve's contract: an incorrect program
        print(f"Evaluation error: {exc}")
        # The default error metrics already hold every validation key ShinkaEvolve sets here.
        metrics = {key: on_error.get(key, default)
                   for key, default in DEFAULT_METRICS_ON_ERROR.items()}
        correct, error = False, str(exc)
    _save_extra(results_dir, metrics, plotting_fn)
    save_json_results(results_dir, metrics, correct, error)
    return metrics, correct, error


__all__ = ["DEFAULT_METRICS_ON_ERROR", "load_program", "run_shinka_eval", "save_json_results"]
