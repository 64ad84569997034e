"""Evaluator for the tour task (module contract: evaluate(program_path) -> dict).

Five instances of 200 uniform random points in the unit square (fixed seeds); a tour must be a
permutation of the points. An instance scores sqrt(n * area) / tour length (higher is better;
the nearest-neighbour start scores about 1.04, a tour improved by 2-opt moves about 1.23); the
task's score is the mean. The candidate has 60 s for all five.
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np

N_POINTS = 200
SEEDS = [101, 102, 103, 104, 105]


def tour_length(points: np.ndarray, tour: list[int]) -> float:
    ordered = points[tour]
    return float(np.sum(np.linalg.norm(ordered - np.roll(ordered, -1, axis=0), axis=1)))


def load(program_path: str):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_tour(tour: object, n: int) -> list[int]:
    try:
        order = [int(i) for i in tour]  # type: ignore[union-attr]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"solve_tour must return a sequence of point indices: {exc}") from None
    if sorted(order) != list(range(n)):
        missing = sorted(set(range(n)) - set(order))[:5]
        raise ValueError(f"the tour must visit each of the {n} points exactly once "
                         f"(got {len(order)} entries; missing e.g. {missing})")
    return order


def evaluate(program_path: str) -> dict:
    module = load(program_path)
    scores, lines = {}, []
    began = time.monotonic()
    for seed in SEEDS:
        points = np.random.default_rng(seed).random((N_POINTS, 2))
        started = time.monotonic()
        tour = check_tour(module.solve_tour(points.copy()), N_POINTS)
        length = tour_length(points, tour)
        scores[f"instance_{seed}"] = np.sqrt(N_POINTS) / length
        lines.append(f"instance {seed}: tour length {length:.4f} "
                     f"({time.monotonic() - started:.2f} s)")
    return {
        "combined_score": float(np.mean(list(scores.values()))),
        "public": {**{k: round(float(v), 4) for k, v in scores.items()},
                   "seconds": round(time.monotonic() - began, 2)},
        "text_feedback": "\n".join(lines),
    }
