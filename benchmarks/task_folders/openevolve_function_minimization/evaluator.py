"""Evaluator for the function minimization example, in OpenEvolve's shape: a few independent
trials of ``run_search()``; the score rewards values close to the known global minimum of
f(x, y) = sin(x) cos(y) + sin(xy) + (x^2 + y^2) / 20 and points inside the bounds."""

import importlib.util

import numpy as np

GLOBAL_MIN_VALUE = -1.5187  # near (-1.704, 0.678)
TRIALS = 5


def f(x, y):
    return np.sin(x) * np.cos(y) + np.sin(x * y) + (x**2 + y**2) / 20


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    values = []
    for trial in range(TRIALS):
        np.random.seed(trial)
        try:
            x, y, _reported = program.run_search()
            x, y = float(x), float(y)
        except Exception as error:
            print(f"Trial {trial} failed: {error}")
            continue
        if not (np.isfinite(x) and np.isfinite(y)) or abs(x) > 5 or abs(y) > 5:
            print(f"Trial {trial}: ({x}, {y}) is outside the bounds")
            continue
        values.append(float(f(x, y)))
    if not values:
        return {"value_score": 0.0, "reliability_score": 0.0, "combined_score": 0.0}
    value_score = float(np.mean([1.0 / (1.0 + abs(v - GLOBAL_MIN_VALUE)) for v in values]))
    reliability = len(values) / TRIALS
    return {
        "value_score": value_score,
        "reliability_score": reliability,
        "best_value": min(values),
        "combined_score": value_score * reliability,
    }
