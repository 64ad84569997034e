"""``cambrian init``: write a small task folder that runs as it is and shows both halves of the
contract (an initial program with an EVOLVE-BLOCK, an ``evaluate(program_path)`` evaluator).

The initial program is optional when ``problem.md`` says what the program must provide: delete
``initial.py``, set ``task.language``, and the LLM writes the first program (checked by the
evaluator) before evolution starts. The config written here lists, commented out, the settings
that go with that and with the mutation schedule and the problem brief."""

from __future__ import annotations

from pathlib import Path

INITIAL = '''"""Find a point x in [-5, 5]^2 that minimises a bumpy function (see problem.md)."""

import math
import random


# EVOLVE-BLOCK-START
def search(objective, budget=2000, seed=0):
    """Return the best point found with at most `budget` calls to objective(x, y)."""
    rng = random.Random(seed)
    best, best_value = (0.0, 0.0), objective(0.0, 0.0)
    for _ in range(budget - 1):
        x, y = rng.uniform(-5, 5), rng.uniform(-5, 5)
        value = objective(x, y)
        if value < best_value:
            best, best_value = (x, y), value
    return best
# EVOLVE-BLOCK-END


def objective(x, y):
    return math.sin(x) * math.cos(y) + math.sin(x * y) + (x * x + y * y) / 20


def run():
    x, y = search(objective)
    return x, y, objective(x, y)
'''

EVALUATOR = '''"""Evaluator (module contract): evaluate(program_path) -> dict of metrics.

combined_score is what Cambrian optimises (this task minimises it, see config.yaml). Keys under
"public" are shown to the LLM; keys under "private" are stored but never shown.
"""

import importlib.util
import math


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x, y, value = module.run()
    if not (-5 <= x <= 5 and -5 <= y <= 5):
        return {"correct": False, "error": f"point ({x:.3f}, {y:.3f}) is outside [-5, 5]^2"}
    true_value = module.objective(x, y)
    if not math.isfinite(true_value):
        return {"correct": False, "error": "objective is not finite at the returned point"}
    return {
        "combined_score": true_value,
        "public": {"x": x, "y": y},
        "private": {"distance_to_known_minimum": math.hypot(x + 1.704, y - 0.678)},
        "text_feedback": f"f({x:.4f}, {y:.4f}) = {true_value:.5f}",
    }
'''

PROBLEM = """Minimise f(x, y) = sin(x)cos(y) + sin(xy) + (x^2 + y^2)/20 over [-5, 5]^2.
`search(objective, budget)` may call `objective` at most `budget` times and must return the best
point it found. The score is f at the returned point (lower is better).
"""

CONFIG = """task:
  direction: minimize
  # language: python      # needed only without initial.py: the LLM then writes the first program
evolution:
  generations: 10
evaluation:
  timeout_s: 30
# mutation:
#   schedule: linear      # tuning / local_fix / refinement / strategy / refactor / crossover,
#                         # exploring early and exploiting late; off: evolution.patch_type_probs
# comprehension:
#   enabled: true         # before the first proposal the LLM writes a brief of problem.md
"""

FILES = {
    "initial.py": INITIAL,
    "evaluate.py": EVALUATOR,
    "problem.md": PROBLEM,
    "config.yaml": CONFIG,
}


def write_skeleton(task_dir: Path, force: bool = False) -> list[Path]:
    root = Path(task_dir)
    if root.exists() and any(root.iterdir()) and not force:
        raise FileExistsError(f"{root} exists and is not empty (use --force to write into it)")
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in FILES.items():
        path = root / name
        path.write_text(text)
        written.append(path)
    return written
