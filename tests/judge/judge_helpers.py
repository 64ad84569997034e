"""The "reach" judged task used across judge tests.

Input is one integer n (from the seed); a program prints an integer x with 0 <= x <= n and
scores x. Programs of any quality are one line long, which makes verdicts and tier decisions
easy to provoke with real programs.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

REACH_GEN = """
    import random, sys
    seed = int(sys.argv[1])
    print(random.Random(seed).randint(100, 1000))
"""

REACH_SCORE = """
    def score(input_text, output_text):
        n = int(input_text.split()[0])
        tokens = output_text.split()
        if len(tokens) != 1:
            return {"error": f"expected one integer, got {len(tokens)} tokens"}
        x = int(tokens[0])
        if not 0 <= x <= n:
            return {"error": f"x={x} is outside [0, {n}]"}
        return {"score": x}
"""

# Held-out seed range chosen so its ids ("seed-987650"...) cannot appear anywhere by accident.
PRIVATE_SEEDS = [987650, 987652]


def write_task(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return folder


def reach_judge(language: str, **overrides: Any) -> dict[str, Any]:
    judge: dict[str, Any] = {
        "language": language,
        "public_seeds": [0, 3],
        "private_seeds": PRIVATE_SEEDS,
        "time_limit_s": 1.0,
        "wall_time_limit_s": 3.0,
        "memory_limit_mb": 256,
        "max_output_bytes": 100_000,
        "max_parallel_cases": 2,
    }
    judge.update(overrides)
    return judge
