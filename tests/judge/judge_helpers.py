"""The "reach" judged task used across judge tests.

Input is one integer n (from the seed); a program prints an integer x with 0 <= x <= n and
scores x. Programs of any quality are one line long, which makes verdicts and tier decisions
easy to provoke with real programs.
"""

from __future__ import annotations

import re
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


# A full task folder for runs through the engine: the reach task with a Python program whose
# answer the scripted LLM rewrites (`return n // 2` -> another expression).
REACH_INITIAL = """
    # EVOLVE-BLOCK-START
    def answer(n):
        return n // 2
    # EVOLVE-BLOCK-END


    print(answer(int(input())))
"""
REACH_STATEMENT = """
    # Reach
    Read one integer n and print one integer x with 0 <= x <= n. The score is x.
"""


def write_reach_run_task(folder: Path, **judge_overrides: Any) -> Path:
    """The reach task as `cambrian run` takes it: program, statement, generator, scorer and a
    config.yaml whose judge section is `reach_judge("python", **judge_overrides)`."""
    import yaml

    judge = reach_judge("python", **judge_overrides)
    config = {"task": {"name": "reach", "direction": "maximize"}, "judge": judge}
    write_task(folder, {"initial.py": REACH_INITIAL, "problem.md": REACH_STATEMENT,
                        "gen.py": REACH_GEN, "score.py": REACH_SCORE})
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def answer_diff(expression: str, current: str = "n // 2") -> str:
    """A SEARCH/REPLACE reply turning `return <current>` into `return <expression>`."""
    return (f"Return {expression}\n<<<<<<< SEARCH\n    return {current}\n=======\n"
            f"    return {expression}\n>>>>>>> REPLACE\n")


CURRENT_ANSWER = re.compile(r"## Current program\n```[a-z]*\n.*?return ([^\n]+)\n", re.DOTALL)


def current_answer(messages: list[dict[str, str]]) -> str:
    """The expression the prompt's current program returns."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    found = CURRENT_ANSWER.search(user)
    assert found, "the prompt shows no current program"
    return found.group(1)
