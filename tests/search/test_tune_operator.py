"""The ``tune`` mutation operator (``trace_feedback.tune_operator``): a generation whose child is
the parent with its numeric knobs tuned by Bayesian optimisation through the task's own
evaluator. Real runs: SQLite store, sandboxed Python evaluator or the C++ judge, the scripted
LLM for the ordinary proposals, and a SIGKILL in the middle of a tune step.

Each run evaluates one LLM child first (a comment change: same score as the initial program);
resumed with a larger budget, its next generation is a tune step (``tune_every: 1``). Tune
trials count against ``evolution.generations`` like children, so a step of ``tune_budget`` B
needs B + 2 more evaluations (the program at its defaults, B trials, then the tuned child).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLM
from support.store_queries import sql, stored_events

from cambrian.api import resume, start
from cambrian.store.store import Store
from cambrian.task.blocks import block_contents

TUNABLE = '''"""The score is -|step_size * iterations - 3.7|: -3.2 as written, 0 at best."""

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

# {sleep}: seconds each evaluation of a parameterised program (a tune trial) takes. (A trial
# leaves no trace outside its scratch folder: evaluations are contained. Its scratch folder,
# RUN_DIR/work/tune-PARENT-N, tells a test that a tune step is running.)
TUNABLE_EVALUATOR = '''import pathlib
import runpy
import time


def evaluate(program_path):
    if "PARAMS" in pathlib.Path(program_path).read_text():
        time.sleep({sleep})
    x = runpy.run_path(program_path)["run"]()
    return {{"combined_score": -abs(x - 3.7), "public": {{"x": x}}}}
'''

CLI = [sys.executable, "-m", "cambrian.cli"]


def neutral_change(messages: list[dict[str, str]], index: int) -> str:
    """A distinct child that scores like its parent (x starts at 0.0 * index). A comment alone
    would be refused as a change that cannot alter behaviour (cambrian/mutate/dead_code.py)."""
    body = "\n".join(block_contents(TUNABLE)).replace("x = 0.0", f"x = 0.0 * {index}")
    return f"Note where x starts\n```python\n{body}\n```\n"


def write_task(root: Path, *, sleep: float = 0.0) -> Path:
    root.mkdir(parents=True)
    (root / "initial.py").write_text(TUNABLE)
    (root / "evaluate.py").write_text(TUNABLE_EVALUATOR.format(sleep=sleep))
    return root


def settings(llm: ScriptedLLM, budget: int) -> list[str]:
    return ["llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=1",
            "database.num_islands=1", "novelty.enabled=false", "meta.enabled=false",
            "mutation.schedule=off", "evolution.patch_types=[full]",
            "evolution.patch_type_probs=[1.0]", "trace_feedback.tune_operator=true",
            "trace_feedback.tune_every=1", f"trace_feedback.tune_budget={budget}"]


def run_to_end(evolution) -> None:
    try:
        asyncio.run(evolution.run())
    finally:
        evolution.store.close()


def tune_rows(store: Store) -> list:
    return [r for r in store.candidates.list() if r.operator == "tune"]


def test_a_tune_step_makes_a_child_that_beats_its_parent_and_the_run_resumes(tmp_path: Path):
    task = write_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    with ScriptedLLM(neutral_change) as llm:
        run_to_end(start(task, overrides=settings(llm, budget=6), run_dir=run_dir))
        calls_before = len(llm.requests)
        run_to_end(resume(run_dir, overrides=["evolution.generations=9"]))  # 1 + 7 + 1
        calls_during_tune = len(llm.requests) - calls_before

        store = Store.open(run_dir)
        [tuned] = tune_rows(store)
        parent = store.candidates.get(tuned.parent_id)
        assert calls_during_tune == 0  # the tune generation asked the LLM nothing
        # Programs 1 and 2 tie at -3.2; the earliest of the best is tuned.
        assert parent.id == 1 and parent.score == pytest.approx(-3.2)
        assert tuned.status == "correct" and tuned.score > parent.score
        assert tuned.model is None and tuned.notes["llm_free"]
        assert sql(store, "SELECT context_id FROM candidates WHERE id=?",
                             (tuned.id,)).fetchone() == (None,)
        assert sql(store, "SELECT kind, operator FROM edges WHERE child_id=?",
                             (tuned.id,)).fetchall() == [("parent", "tune")]
        tuning = tuned.notes["tuning"]
        assert tuning["trials"] == 7  # the rewritten program at the defaults, then 6 trials
        assert tuning["tuned_score"] == pytest.approx(tuned.score)  # the evaluation agrees
        assert {k["name"] for k in tuning["knobs"]} == {"step_size", "iterations"}
        # Only EVOLVE-BLOCK literals changed; the layout is the parent's, without PARAMS.
        assert "PARAMS" not in tuned.source
        assert tuned.source.split("# EVOLVE-BLOCK-END")[1] == \
            parent.source.split("# EVOLVE-BLOCK-END")[1]
        assert f"iterations = {int(tuning['values']['iterations'])}\n" in tuned.source
        [event] = stored_events(store, "tune")
        assert event["payload"]["child_id"] == tuned.id and event["payload"]["parent_id"] == 1
        store.close()

        # Resumed again: the next tune step is due and takes a program not tuned before.
        run_to_end(resume(run_dir, overrides=["evolution.generations=17"]))  # 9 + 7 + 1
    store = Store.open(run_dir)
    steps = [e["payload"] for e in stored_events(store, "tune")]
    assert [s["parent_id"] for s in steps] == [1, tuned.id]  # program 1 is not tuned twice
    assert store.candidates.count("correct", "incorrect") == 4 and store.candidates.count("pending") == 0
    # Children and trials together spent exactly the evaluation budget.
    assert 3 + sum(s["trials"] for s in steps) == 17
    assert store.candidates.get(tuned.id).status == "correct"  # committed work untouched
    store.close()


def test_tune_operator_switched_off_leaves_every_generation_to_the_llm(tmp_path: Path):
    task = write_task(tmp_path / "task")
    with ScriptedLLM(neutral_change) as llm:
        sets = [*settings(llm, budget=6), "trace_feedback.tune_operator=false",
                "evolution.generations=3"]
        run_to_end(start(task, overrides=sets, run_dir=tmp_path / "run"))
    store = Store.open(tmp_path / "run")
    assert not tune_rows(store) and not stored_events(store, "tune")
    assert store.candidates.count("correct") == 4
    store.close()


def test_a_failing_tune_step_is_recorded_and_the_generation_goes_to_the_llm(tmp_path: Path):
    task = write_task(tmp_path / "task")
    run_dir = tmp_path / "run"
    with ScriptedLLM(neutral_change) as llm:
        run_to_end(start(task, overrides=settings(llm, budget=4), run_dir=run_dir))
        evolution = resume(run_dir, overrides=["evolution.generations=5"])

        async def broken(source: str, work_dir: Path):
            raise OSError("disk full")

        evolution.hook("tune").evaluate = broken  # the trial evaluations fail outright
        run_to_end(evolution)
    store = Store.open(run_dir)
    [step] = [e["payload"] for e in stored_events(store, "tune")]
    assert step["stopped"] == "the step failed: OSError: disk full"
    assert step["child_id"] is None and step["parent_id"] == 1
    assert not tune_rows(store)
    # The step's one trial counts; every other evaluation went to LLM children, and too few
    # were left for a second step.
    assert step["trials"] == 1
    assert [r.operator for r in store.candidates.list("correct")] == ["init"] + ["full"] * 4
    store.close()


def evaluated(store_path: Path) -> dict[int, tuple]:
    connection = sqlite3.connect(store_path)
    try:
        rows = connection.execute("SELECT id, operator, score, status FROM candidates "
                                  "WHERE status IN ('correct','incorrect')").fetchall()
    finally:
        connection.close()
    return {r[0]: r[1:] for r in rows}


def test_a_kill_in_the_middle_of_a_tune_step_resumes_cleanly(tmp_path: Path):
    task = write_task(tmp_path / "task", sleep=0.5)
    run_dir = tmp_path / "run"
    store_path = run_dir / "run.sqlite"
    second_trial = run_dir / "work" / "tune-1-2"
    with ScriptedLLM(neutral_change) as llm:
        run_to_end(start(task, overrides=settings(llm, budget=4), run_dir=run_dir))
        before = evaluated(store_path)
        process = subprocess.Popen([*CLI, "resume", str(run_dir), "--generations", "7", "--quiet"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if second_trial.exists():
                break
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        store = Store.open(run_dir)
        assert not stored_events(store, "tune") and not tune_rows(store), "the kill must land mid-step"
        store.close()

        resumed = subprocess.run([*CLI, "resume", str(run_dir), "--generations", "7", "--quiet"],
                                 capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        assert "Evaluations: 7 (2 children, 5 tune trials)" in resumed.stdout

    after = evaluated(store_path)
    assert {i: after[i] for i in before} == before  # committed work untouched
    store = Store.open(run_dir)
    [tuned] = tune_rows(store)
    [step] = [e["payload"] for e in stored_events(store, "tune")]
    assert step["child_id"] == tuned.id and step["parent_id"] == 1 and step["trials"] == 5
    assert tuned.status == "correct" and tuned.score > store.candidates.get(1).score
    assert len(after) == 3 and store.candidates.count("pending") == 0  # the initial program + 2 children
    # The interrupted step ran again from its start (same seed), its killed trials uncounted.
    assert not (run_dir / "work" / "tune-1-2").exists()
    assert sql(store, "PRAGMA integrity_check").fetchone()[0] == "ok"
    store.close()


CPP_PROGRAM = """#include <cstdio>

int main() {
    long long n = 0;
    if (scanf("%lld", &n) != 1) return 1;
    // EVOLVE-BLOCK-START
    double fraction = 0.25;
    // EVOLVE-BLOCK-END
    long long x = (long long)(fraction * n);
    if (x > n) x = n;
    printf("%lld\\n", x);
    return 0;
}
"""

CPP_GENERATOR = "import random, sys\nprint(random.Random(int(sys.argv[1])).randint(100, 1000))\n"

CPP_SCORER = '''def score(input_text, output_text):
    n = int(input_text.split()[0])
    x = int(output_text.split()[0])
    if not 0 <= x <= n:
        return {"error": f"x={x} is outside [0, {n}]"}
    return {"score": x / n}
'''

CPP_CONFIG = """task:
  direction: maximize
  initial_program: initial.cpp
judge:
  language: cpp
  generator: gen.py
  scorer: score.py
  public_seeds: [0, 2]
  time_limit_s: 1.0
  wall_time_limit_s: 3.0
  memory_limit_mb: 256
  max_parallel_cases: 2
"""


@pytest.mark.skipif(subprocess.run(["which", "g++"], capture_output=True).returncode != 0,
                    reason="needs g++")
def test_a_tune_step_on_a_judged_cpp_task_goes_through_define_macros(tmp_path: Path):
    task = tmp_path / "task"
    task.mkdir()
    for name, text in {"initial.cpp": CPP_PROGRAM, "gen.py": CPP_GENERATOR,
                       "score.py": CPP_SCORER, "config.yaml": CPP_CONFIG}.items():
        (task / name).write_text(text)
    run_dir = tmp_path / "run"

    def comment(messages: list[dict[str, str]], index: int) -> str:
        return f"Explain\n```cpp\n    double fraction = 0.25; // share of n, {index}\n```\n"

    with ScriptedLLM(comment) as llm:
        run_to_end(start(task, overrides=settings(llm, budget=4), run_dir=run_dir))
        run_to_end(resume(run_dir, overrides=["evolution.generations=7"]))  # 1 + 5 + 1
    store = Store.open(run_dir)
    [tuned] = tune_rows(store)
    parent = store.candidates.get(tuned.parent_id)
    assert tuned.status == "correct" and tuned.score > parent.score
    assert [k["name"] for k in tuned.notes["tuning"]["knobs"]] == ["fraction"]
    assert "double fraction = 0.25;" not in tuned.source and "#define" not in tuned.source
    store.close()
    # The trials the judge compiled were the #define form of the program (seed 001 B.9).
    compiled = [p.read_text() for p in (run_dir / ".compile_cache").glob("*/main.cpp")]
    with_macros = [s for s in compiled if "#define _BO_FRACTION" in s]
    assert len(with_macros) == 5  # the defaults and 4 trials
    assert all("double fraction = _BO_FRACTION;" in s for s in with_macros)
