"""Stored runs that fill every panel of the UI, each made by a real evolution against the
scripted OpenAI-compatible server:

- ``harvest-run``: a judged C++ task (compiled by the system's g++, run on generated cases, a
  verdict per case), two models (so the bandit has two arms; one of them priced, so the run
  costs money), novelty rejection with OpenAI-style embeddings served by the scripted server,
  the meta-scratchpad, and a tune step.
- ``priced-counter-run``: the counter task with a priced model and an evaluator that prints to
  stdout and stderr.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import textwrap
from pathlib import Path
from typing import Any

from support.scripted_llm import (
    SCRIPTED_META_REPLY,
    Responder,
    ScriptedLLM,
    incrementing,
    write_counter_task,
)

from cambrian.api import start

PRICED = {"price_input_per_mtok": 1000.0, "price_output_per_mtok": 5000.0}  # $0.2 per call
HARVEST_GENERATIONS = 30
CRASH_NOTE = "cannot handle a multiple of seven"

HARVEST_PROGRAM = """#include <cstdio>

// Take a share of the orchard's n trees; taking more than the cap is a wrong answer.
int main() {
    long long n = 0, cap = 0;
    if (scanf("%lld %lld", &n, &cap) != 2) return 1;
    // EVOLVE-BLOCK-START
    double fraction = 0.25;
    // EVOLVE-BLOCK-END
    long long x = (long long)(fraction * n);
    printf("%lld\\n", x);
    return 0;
}
"""

HARVEST_GENERATOR = """
    import random, sys
    rng = random.Random(int(sys.argv[1]))
    n = rng.randint(100, 1000)
    print(n, rng.randint(n * 6 // 10, n))
"""

HARVEST_SCORER = """
    def score(input_text, output_text):
        n, cap = (int(v) for v in input_text.split()[:2])
        x = int(output_text.split()[0])
        if not 0 <= x <= cap:
            return {"error": f"took {x} trees, the cap is {cap}"}
        return {"score": x / n}
"""

HARVEST_STATEMENT = """
    # Harvest
    Read n and cap; print how many of the n trees to take (at most cap). The score is x / n.
"""

HARVEST_CONFIG = """
    task:
      name: harvest
      direction: maximize
      initial_program: initial.cpp
    judge:
      language: cpp
      generator: gen.py
      scorer: score.py
      public_seeds: [0, 4]
      time_limit_s: 1.0
      wall_time_limit_s: 4.0
      memory_limit_mb: 256
      max_parallel_cases: 2
"""

FRACTION_LINE = re.compile(r"double fraction = (\d+\.\d+);")


def write_harvest_task(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "initial.cpp").write_text(HARVEST_PROGRAM)
    for name, text in {"gen.py": HARVEST_GENERATOR, "score.py": HARVEST_SCORER,
                       "problem.md": HARVEST_STATEMENT, "config.yaml": HARVEST_CONFIG}.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return folder


def current_fraction(messages: list[dict[str, str]]) -> tuple[str, str]:
    """The current program's fraction line and its number as written."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    found = FRACTION_LINE.search(user.split("## Current program", 1)[-1])
    assert found, "the prompt shows no current program"
    return found.group(0), found.group(1)


def harvest_replies() -> Responder:
    """Edits of the fraction line, in a cycle over the mutation calls (whatever else the run
    asks in between): mostly a bigger share; a reordering of the line's numbers (the same
    words: novelty refuses it as a near copy); a share far over the cap (some cases wrong); a
    program that crashes on some cases (a runtime error, its stderr kept)."""
    calls = itertools.count()

    def reply(messages: list[dict[str, str]], index: int) -> str:
        if "Update the notes" in messages[-1]["content"]:
            return SCRIPTED_META_REPLY
        line, literal = current_fraction(messages)
        turn = next(calls) % 6
        if turn == 2:
            new = line.replace(literal, literal.split(".", 1)[1] + ".0")
        elif turn == 4:
            new = f"double fraction = 0.9{index};"
        elif turn == 5:
            new = (f"{line}\n    if (n % 7 == 0) {{ fprintf(stderr, \"{CRASH_NOTE}: %lld\\n\","
                   " n); return 3; }")
        else:
            new = f"double fraction = {min(float(literal) + 0.01 * (turn + 1), 0.59):.4f};"
        return (f"Take a larger share of the trees\n<<<<<<< SEARCH\n    {line}\n=======\n"
                f"    {new}\n>>>>>>> REPLACE\n")

    return reply


def harvest_sets(llm: ScriptedLLM) -> list[str]:
    models = [llm.model_config(name="alpha"), llm.model_config(name="beta", **PRICED)]
    return ["llm.models=" + json.dumps(models), f"evolution.generations={HARVEST_GENERATIONS}",
            "evolution.patch_types=[diff]", "evolution.patch_type_probs=[1.0]",
            "evolution.max_parallel_evaluations=1", "comprehension.enabled=false",
            "novelty.embedding=openai", f"novelty.base_url={llm.base_url}",
            "novelty.embedding_model=embed-test", "novelty.threshold=0.8",
            "novelty.judge=false", "novelty.max_attempts=1",
            "meta.enabled=true", "meta.interval=3",
            "trace_feedback.tune_operator=true", "trace_feedback.tune_every=5",
            "trace_feedback.tune_budget=3"]


PRINTING_EVALUATOR = """import runpy
import sys

LIMIT = 12


def evaluate(program_path):
    value = runpy.run_path(program_path)["run"]()
    print(f"evaluating VALUE = {value}")
    print(f"checked against the limit {LIMIT}", file=sys.stderr)
    if value > LIMIT:
        return {"correct": False, "error": f"VALUE {value} exceeds the limit {LIMIT}"}
    return {"combined_score": float(value), "public": {"value": value}}
"""


def make_rich_runs(root: Path) -> Path:
    """``root``/runs holding the two runs above; returns that folder."""
    runs = root / "runs"
    harvest = write_harvest_task(root / "harvest-task")
    with ScriptedLLM(harvest_replies()) as llm:
        _evolve(harvest, runs / "harvest-run", harvest_sets(llm))
    counter = write_counter_task(root / "counter-task")
    (counter / "evaluate.py").write_text(PRINTING_EVALUATOR)
    with ScriptedLLM(incrementing) as llm:
        _evolve(counter, runs / "priced-counter-run", [
            "llm.models=[" + json.dumps(llm.model_config(name="priced", **PRICED)) + "]",
            "evolution.generations=6", "novelty.enabled=false", "meta.enabled=false",
            "evolution.max_parallel_evaluations=1"])
    return runs


def _evolve(task: Path, run_dir: Path, overrides: list[str]) -> Any:
    evolution = start(task, run_dir=run_dir, overrides=overrides)
    try:
        return asyncio.run(evolution.run())
    finally:
        evolution.store.close()
