"""A judged task's cases spread over the Ray workers (``DistributedJudge``): a failed case stops
the chunks still running, as a failed case stops the cases a local judge has not started."""

from __future__ import annotations

import asyncio
import random
import textwrap
import time
from pathlib import Path

import pytest
from ray import exceptions as ray_errors
from ray_helpers import LocalRayCluster, Losing, processes_naming, worker_label

from cambrian.config import ExecutionConfig
from cambrian.evaluate.distributed.executor import RayExecutor
from cambrian.evaluate.executor import EvaluationJob
from cambrian.evaluate.judge import build_task_evaluator

# The "reach" task of tests/judge: a case is one integer n; a program prints 0 <= x <= n.
GENERATOR = """
    import random, sys
    print(random.Random(int(sys.argv[1])).randint(100, 1000))
"""
SCORER = """
    def score(input_text, output_text):
        n, x = int(input_text.split()[0]), int(output_text.split()[0])
        return {"score": x} if 0 <= x <= n else {"error": f"x={x} is outside [0, {n}]"}
"""


def write_reach_task(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "gen.py").write_text(textwrap.dedent(GENERATOR))
    (folder / "score.py").write_text(textwrap.dedent(SCORER))
    return folder


def test_a_failed_case_cancels_the_chunks_still_running(
        tmp_path: Path, ray_cluster: LocalRayCluster, two_workers: list[str]):
    task = write_reach_task(tmp_path / "reach")
    first_n = random.Random(0).randint(100, 1000)  # the generator's case for seed 0
    # Wrong at once on the first case, asleep on every other one (until a 60 s wall limit).
    program = (f"import time\nn = int(input())\nif n == {first_n}:\n    print(-1)\n"
               "else:\n    time.sleep(600)\n")
    judge = {"language": "python", "public_seeds": [0, 3], "time_limit_s": 60.0,
             "wall_time_limit_s": 60.0, "memory_limit_mb": 256}
    evaluator = build_task_evaluator(task, judge, run_dir=tmp_path / "run")
    executor = RayExecutor(evaluator, ExecutionConfig(
        backend="ray", ray_address=ray_cluster.address, case_chunks=2,
        worker_dir=str(tmp_path / "workers")))

    async def judged():  # type: ignore[no-untyped-def]
        await executor.prepare()
        try:
            began = time.monotonic()
            outcome = await executor.run(EvaluationJob(program, tmp_path / "work", 7))
            return outcome, time.monotonic() - began
        finally:
            await executor.close()

    outcome, elapsed = asyncio.run(judged())
    result = outcome.result
    assert result.status == "incorrect" and "WA" in result.extra["verdicts"]
    # Case 0 failed; its chunk skipped case 1 and the other chunk (cases 2, 3) was cancelled.
    assert [case["case"] for case in result.extra["cases"]] == ["seed-0"]
    assert result.extra["skipped_cases"] == 3
    assert elapsed < 30
    assert set(outcome.worker.split(",")) <= {worker_label(n) for n in two_workers}
    deadline = time.monotonic() + 10
    while processes_naming(str(tmp_path / "workers")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_naming(str(tmp_path / "workers")) == []


async def test_a_judged_candidate_whose_jobs_lose_their_worker_fails_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    judge = {"language": "python", "public_seeds": [0, 3]}
    evaluator = build_task_evaluator(write_reach_task(tmp_path / "reach"), judge,
                                     run_dir=tmp_path / "run")
    executor = RayExecutor(evaluator, ExecutionConfig(backend="ray", max_retries=0))
    monkeypatch.setattr(executor, "_plan", lambda: "plan")
    executor._compile = Losing(ray_errors.WorkerCrashedError())  # no cluster: lost at once
    outcome = await executor.run(EvaluationJob("print(0)", tmp_path / "work", 7))
    assert outcome.result.status == "crashed" and outcome.worker == "ray"
    assert outcome.result.error.startswith("the Ray worker evaluating it was lost 1 time; ")
