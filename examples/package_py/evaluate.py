"""Evaluator of the makespan scheduling package: imports `schedule` from the program's folder
and scores it on seeded instances (score 1.0: every makespan at its lower bound)."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path

INSTANCES = 40


def instances() -> list[tuple[list[float], int]]:
    rng = random.Random(2024)
    found = []
    for _ in range(INSTANCES):
        jobs, machines = rng.randint(20, 200), rng.randint(3, 12)
        times = [round(rng.lognormvariate(0, 0.8) * 10, 2) for _ in range(jobs)]
        found.append((times, machines))
    return found


def load_package(program_path: str):
    """The `schedule` package whose __init__.py is `program_path`."""
    package = Path(program_path).resolve().parent
    sys.path.insert(0, str(package.parent))
    for name in [n for n in sys.modules if n == package.name or n.startswith(package.name + ".")]:
        del sys.modules[name]
    return importlib.import_module(package.name)


def evaluate(program_path: str) -> dict:
    schedule = load_package(program_path)
    ratios = []
    for index, (times, machines) in enumerate(instances()):
        placed = schedule.solve(list(times), machines)
        if len(placed) != len(times) or any(
                not isinstance(m, int) or not 0 <= m < machines for m in placed):
            return {"combined_score": 0.0, "correct": False,
                    "error": f"instance {index}: solve must return one machine index in "
                             f"0..{machines - 1} per job ({len(times)} jobs), got {placed[:8]}..."}
        loads = [0.0] * machines
        for job, machine in enumerate(placed):
            loads[machine] += times[job]
        bound = max(sum(times) / machines, max(times))
        ratios.append(bound / max(loads))
    score = sum(ratios) / len(ratios)
    return {"combined_score": score,
            "public": {"mean_ratio": score, "worst_ratio": min(ratios)},
            "text_feedback": f"mean bound/makespan {score:.4f}, worst {min(ratios):.4f}"}
