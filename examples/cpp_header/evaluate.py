"""Evaluator of the knapsack program: compiles solver.cpp (which includes knapsack.hpp) in the
program's folder, runs it on seeded instances and scores value / fractional upper bound."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

INSTANCES = 30


def instances() -> list[tuple[list[tuple[int, int]], int]]:
    rng = random.Random(7)
    found = []
    for _ in range(INSTANCES):
        n = rng.randint(50, 400)
        items = []
        for _ in range(n):
            weight = rng.randint(1, 1000)
            items.append((max(1, int(weight * rng.uniform(0.5, 1.5) + rng.randint(-50, 50))),
                          weight))
        capacity = sum(w for _, w in items) // rng.randint(3, 8)
        found.append((items, capacity))
    return found


def upper_bound(items: list[tuple[int, int]], capacity: int) -> float:
    bound, room = 0.0, capacity
    for value, weight in sorted(items, key=lambda it: it[0] / it[1], reverse=True):
        take = min(1.0, room / weight)
        bound += take * value
        room -= take * weight
        if room <= 0:
            break
    return bound


def evaluate(program_path: str) -> dict:
    folder = Path(program_path).resolve().parent
    binary = folder / "solver"
    build = subprocess.run(["g++", "-O2", "-std=c++17", "-o", str(binary),
                            str(Path(program_path).resolve())],
                           capture_output=True, text=True, cwd=folder, timeout=90)
    if build.returncode != 0:
        return {"combined_score": 0.0, "correct": False,
                "error": "compilation failed:\n" + build.stderr[-2000:]}
    ratios = []
    for index, (items, capacity) in enumerate(instances()):
        text = f"{len(items)} {capacity}\n" + "".join(f"{v} {w}\n" for v, w in items)
        run = subprocess.run([str(binary)], input=text, capture_output=True, text=True,
                             timeout=10)
        if run.returncode != 0:
            return {"combined_score": 0.0, "correct": False,
                    "error": f"instance {index}: exit code {run.returncode}: {run.stderr[-500:]}"}
        try:
            chosen = [int(token) for token in run.stdout.split()]
        except ValueError:
            return {"combined_score": 0.0, "correct": False,
                    "error": f"instance {index}: output is not item indices: {run.stdout[:200]}"}
        if len(set(chosen)) != len(chosen) or any(not 0 <= i < len(items) for i in chosen):
            return {"combined_score": 0.0, "correct": False,
                    "error": f"instance {index}: indices must be distinct and in 0..{len(items) - 1}"}
        weight = sum(items[i][1] for i in chosen)
        if weight > capacity:
            return {"combined_score": 0.0, "correct": False,
                    "error": f"instance {index}: weight {weight} exceeds capacity {capacity}"}
        ratios.append(sum(items[i][0] for i in chosen) / upper_bound(items, capacity))
    score = sum(ratios) / len(ratios)
    return {"combined_score": score,
            "public": {"mean_ratio": score, "worst_ratio": min(ratios)},
            "text_feedback": f"mean value/bound {score:.4f}, worst {min(ratios):.4f}"}
