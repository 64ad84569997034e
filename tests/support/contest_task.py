"""A task for the strategy layer's tests (`--search contest`): the counter task with two
sub-problems whose leaders differ, a combiner, and a scripted model that answers mutation,
strategy-tagging and reflection prompts."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from cambrian.meta.strategy_prompts import CONFIRM_QUESTION, TAG_QUESTION
from support.scripted_llm import incrementing, write_counter_task

ASKED = "Recommend how the search should go on"
# Small cases peak at VALUE 12, large ones grow with it: different programs lead each.
EVALUATOR = """import runpy

def evaluate(program_path):
    value = runpy.run_path(program_path)["run"]()
    if value > 1000:
        return {"correct": False, "error": f"VALUE {value} exceeds the limit"}
    small = 24 - abs(value - 12)
    cases = [{"id": "small-1", "score": small}, {"id": "small-2", "score": small},
             {"id": "large-1", "score": value}, {"id": "large-2", "score": value}]
    return {"combined_score": (2 * small + 2 * value) / 4, "cases": cases}
"""
COMBINER = """
def combine(sources):
    # The large cases' leader, marked as combined (a task would dispatch on the input).
    return sources["large"] + "# combined with the small cases' leader\\n"
"""
CONFIG = """
decomposition:
  subproblems:
    - {name: small, cases: ["small-*"], description: "the small instances"}
    - {name: large, cases: ["large-*"]}
  combiner: combine.py
  combine_every: 4
reflection:
  interval: 4
phases:
  stagnation: 3
"""


def reply(messages: list[dict[str, str]], index: int) -> str:
    first = next(m["content"] for m in messages if m["role"] == "user")
    if TAG_QUESTION in first:
        if CONFIRM_QUESTION in messages[-1]["content"]:
            return "FAMILY: local search | IDEA: small steps"
        value = int(re.search(r"VALUE = (-?\d+)", first).group(1))
        return f"FAMILY: {'greedy' if value % 2 else 'local search'} | IDEA: VALUE {value}"
    if ASKED in messages[-1]["content"]:
        return "1. FAVOUR refinement: it beat the parent most\n2. TRY smaller steps\n"
    return incrementing(messages, index)


def write_contest_task(root: Path) -> Path:
    task = write_counter_task(root, config=CONFIG)
    (task / "evaluate.py").write_text(EVALUATOR)
    (task / "combine.py").write_text(textwrap.dedent(COMBINER))
    return task
