"""Hand-built runs for the trace tests, written through the real Store API.

``LINEAGE_RUN`` is a six-program Python run whose cycling figures are worked out by hand in
``test_trace_cycling.py``::

    1 (seed, it 0) ─┬─ 2 (it 1) ── 4 (it 3) ── 6 (it 5, final best)
                    └─ 3 (it 2) ── 5 (it 4)
    7 (it 6): a proposal whose reply could not be applied (patch_failed, no source)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.store_queries import add_candidate, add_context

from cambrian.core.evaluation import EvaluationResult
from cambrian.llm.base import GenerationParams, LLMRequest, LLMResponse, Message, Usage
from cambrian.store.store import Store


@dataclass(frozen=True)
class Program:
    parent: int | None  # 1-based index of the parent in the list, None for the seed
    iteration: int
    source: str | None
    score: float | None
    status: str = "correct"


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


SRC_1 = lines("def f(x):", "    # scale", "    a = 1", "    b = 2", "    c = a + b", "    return c")
SRC_2 = lines("def f(x):", "    a = 10", "    c = a + b", "    return c")
SRC_3 = lines("def f(x):", "    # scale", "    a = 1", "    b = 2", "    c = a * b", "    return c")
SRC_4 = lines("def f(x):", "    # scale", "    a = 1  # restored", "    b = 2", "    c = a + b",
              "    d = 3", "    return c + d")
SRC_5 = lines("def f(x):", "    # scale", "    a = 2", "    b = 2", "    c = a + b", "    a = 10",
              "    return c")
SRC_6 = lines("def f(x):", "    # scale", "    a = 1  # restored", "    b = 2", "    c = a + b",
              "    d = 3", "    return c")

LINEAGE_RUN = [
    Program(None, 0, SRC_1, 1.0),
    Program(1, 1, SRC_2, 2.0),
    Program(1, 2, SRC_3, 1.5),
    Program(2, 3, SRC_4, 3.0),
    Program(3, 4, SRC_5, 2.5),
    Program(4, 5, SRC_6, 4.0),
    Program(6, 6, None, None, status="patch_failed"),
]


def build_run(run_dir: Path, programs: list[Program], *, direction: str = "maximize",
              language: str = "python", task: str = "hand-built") -> Path:
    """A run store holding ``programs`` (ids 1..n), each child made by one recorded LLM call."""
    store = Store.open(run_dir, create=True)
    with store.transaction():
        store.runs.create(run_id=f"run-{task}", task_name=task, task_dir="/tasks/" + task,
                         direction=direction, language=language,
                         config={"evolution": {"generations": len(programs) - 1}}, seed=0,
                         code_version="test")
        store.runs.add_environment(evaluator="evaluate.py", contract="module",
                              command="evaluate(P) from evaluate.py", limits={"timeout_s": 10},
                              toolchain={"python": "3.11"}, file_hashes={"evaluate.py": "00"})
        store.meta.set("program_filename", "program.py")
        for index, program in enumerate(programs, start=1):
            context_id = None
            if program.parent is not None:
                request = LLMRequest((Message("system", "You improve programs."),
                                      Message("user", f"Improve program {program.parent}")),
                                     GenerationParams(temperature=0.5))
                response = LLMResponse(text=f"```python\n{program.source or 'garbage'}```",
                                       model="scripted", usage=Usage(120, 40),
                                       finish_reason="stop", latency_s=0.5, cost_usd=0.001)
                context_id = add_context(store, purpose="mutation", model="scripted",
                                               provider="openai", request=request,
                                               response=response)
            candidate_id = add_candidate(store, 
                generation=program.iteration, island=0, parent_id=program.parent,
                operator="init" if program.parent is None else "diff", status="pending",
                language=language, source=program.source, model=None if program.parent is None
                else "scripted", context_id=context_id,
                description=f"program {index}",
            )
            assert candidate_id == index
            if program.parent is not None:
                store.lineage.add_edge(program.parent, candidate_id, "parent", "diff")
            if program.source is None:
                store.candidates.update(candidate_id, status=program.status,
                                       error="reply could not be applied")
                continue
            ok = program.status == "correct"
            store.evaluations.add(candidate_id, EvaluationResult(
                status="ok" if ok else "incorrect", combined_score=program.score,
                public={"value": program.score}, private={"secret": index},
                text_feedback=f"scored {program.score}", duration_s=0.25,
            ))
            store.candidates.update(candidate_id, status=program.status, score=program.score)
    store.close()
    return run_dir


# ---------------------------------------------------------------------------- deletion lineage

D_SRC_1 = lines("def g(x):", "    y = x * 0.5", "    y = clip(y)", "    return y")
D_SRC_2 = lines("def g(x):", "    y = x * 0.5", "    return y")
D_SRC_3 = lines("def g(x):", "    y = x * 0.5", "    y = clip(y)", "    else:", "    return y")
D_SRC_4 = lines("def g(x):", "    y = x * 0.7", "    return y")

# 1 ── 2 (drops the clip: better) ── 3 (adds it back: worse) ── 4 (drops it again: fails)
DELETION_RUN = [
    Program(None, 0, D_SRC_1, 1.0),
    Program(1, 1, D_SRC_2, 2.0),
    Program(2, 2, D_SRC_3, 1.5),
    Program(3, 3, D_SRC_4, None, status="incorrect"),
]


# ---------------------------------------------------------------------------- a tunable task

TUNABLE_PROGRAM = '''"""A toy task whose score depends on two constants only."""
import math

# EVOLVE-BLOCK-START
def solve():
    step_size = 0.05  # how far each step goes
    iterations = 10
    x = 0.0
    for _ in range(iterations):
        x += step_size
    return x
# EVOLVE-BLOCK-END


def run():
    return solve()
'''

TUNABLE_EVALUATOR = '''import runpy

TARGET = 3.7


def evaluate(program_path):
    x = runpy.run_path(program_path)["run"]()
    return {"combined_score": -abs(x - TARGET), "public": {"x": x}}
'''


def write_tunable_task(root: Path) -> Path:
    """Score = -|step_size * iterations - 3.7|: -3.2 at the defaults, 0 at the optimum."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "initial.py").write_text(TUNABLE_PROGRAM)
    (root / "evaluate.py").write_text(TUNABLE_EVALUATOR)
    return root
