"""Evaluator for black-box minimisation (module contract: evaluate(program_path) -> dict).

The candidate's `minimize(f, dim, lower, upper, budget, seed)` runs on six hidden problems:
shifted and rotated Rastrigin, Ackley and Rosenbrock functions in 8 dimensions, two instances
each, 3000 calls per problem. The score of a problem is log10(1 + gap), the gap being the best
value `f` returned within the budget minus the problem's minimum (0 when found); the task's
score is the mean over the problems (minimised). The problems' shifts and rotations are drawn
here from fixed seeds the candidate never sees; calls past the budget are not counted, points
outside the box are clipped into it.
"""

from __future__ import annotations

import importlib.util
import math
import time

import numpy as np

DIM = 8
LOWER, UPPER = -5.0, 5.0
BUDGET = 3000
INSTANCES = [("rastrigin", 11), ("rastrigin", 12), ("ackley", 21), ("ackley", 22),
             ("rosenbrock", 31), ("rosenbrock", 32)]


def rastrigin(z: np.ndarray) -> float:
    return float(10 * z.size + np.sum(z * z - 10 * np.cos(2 * np.pi * z)))


def ackley(z: np.ndarray) -> float:
    n = z.size
    return float(-20 * np.exp(-0.2 * np.sqrt(np.sum(z * z) / n))
                 - np.exp(np.sum(np.cos(2 * np.pi * z)) / n) + 20 + math.e)


def rosenbrock(z: np.ndarray) -> float:
    y = z + 1.0  # minimum at z = 0
    return float(np.sum(100 * (y[1:] - y[:-1] ** 2) ** 2 + (1 - y[:-1]) ** 2))


FUNCTIONS = {"rastrigin": rastrigin, "ackley": ackley, "rosenbrock": rosenbrock}


class Problem:
    """f(x) = base(R (x - shift)): minimum 0 at x = shift, inside the box."""

    def __init__(self, name: str, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.name = name
        self._base = FUNCTIONS[name]
        self._shift = rng.uniform(0.6 * LOWER, 0.6 * UPPER, size=DIM)
        self._rotation, _ = np.linalg.qr(rng.normal(size=(DIM, DIM)))
        self.calls = 0
        self.best = math.inf

    def __call__(self, x: object) -> float:
        point = np.clip(np.asarray(x, dtype=float).reshape(DIM), LOWER, UPPER)
        value = self._base(self._rotation @ (point - self._shift))
        self.calls += 1
        if self.calls <= BUDGET and value < self.best:
            self.best = value
        return value


def load(program_path: str):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def evaluate(program_path: str) -> dict:
    module = load(program_path)
    scores, lines = {}, []
    began = time.monotonic()
    for index, (name, seed) in enumerate(INSTANCES):
        problem = Problem(name, seed)
        module.minimize(problem, DIM, LOWER, UPPER, BUDGET, index)
        if problem.calls == 0 or not math.isfinite(problem.best):
            raise ValueError(f"minimize never called f on the {name} problem")
        scores[f"{name}_{seed}"] = math.log10(1 + problem.best)
        over = f", {problem.calls - BUDGET} calls past the budget ignored" if problem.calls > BUDGET else ""
        lines.append(f"{name} #{seed}: best value {problem.best:.4g} after {min(problem.calls, BUDGET)} calls{over}")
    score = sum(scores.values()) / len(scores)
    return {
        "combined_score": score,
        "public": {**{k: round(v, 4) for k, v in scores.items()},
                   "seconds": round(time.monotonic() - began, 2)},
        "text_feedback": "Lower is better (0 is every minimum found).\n" + "\n".join(lines),
    }
