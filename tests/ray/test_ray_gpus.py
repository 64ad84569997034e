"""On Ray, an evaluation that asks for a GPU asks Ray for it (`num_gpus`) and is pinned to the
one Ray gave its job, through the same lease as a local evaluation. A local cluster of its own
declares two GPUs (Ray hands out declared GPUs on a machine without any), in a subprocess so
the session's cluster is left alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from ray_helpers import CLUSTER_ENV

DRIVER = """
import asyncio, json, sys
from pathlib import Path
import ray
ray.init(address="local", num_cpus=2, num_gpus=2, include_dashboard=False,
         logging_level="ERROR", log_to_driver=False)
from cambrian.config import ExecutionConfig
from cambrian.evaluate.distributed.executor import RayExecutor
from cambrian.evaluate.executor import EvaluationJob
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

task = Path(sys.argv[1])
evaluator = ProgramEvaluator(EvaluatorSettings(evaluator_path=task / "evaluator.py", gpus=1,
                                               gpu_ids=None, warm_worker=False))
executor = RayExecutor(evaluator, ExecutionConfig(backend="ray", worker_dir=sys.argv[2]))

async def main():
    outcomes = await asyncio.gather(*(executor.run(EvaluationJob("X = 1\\n", task / f"w{i}"))
                                      for i in range(4)))
    await executor.close()
    return [[o.result.status, o.result.public.get("gpus"), o.result.extra.get("gpus")]
            for o in outcomes]

print("SEEN " + json.dumps(asyncio.run(main())))
"""

EVALUATOR = """
import os

def evaluate(program_path):
    return {"combined_score": 1.0, "public": {"gpus": os.environ.get("CUDA_VISIBLE_DEVICES")}}
"""


def test_ray_jobs_ask_for_gpus_and_each_evaluation_is_pinned_to_its_own(tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    (task / "evaluator.py").write_text(textwrap.dedent(EVALUATOR))
    env = {**os.environ, **CLUSTER_ENV}
    env.pop("RAY_ADDRESS", None)
    completed = subprocess.run(
        [sys.executable, "-c", DRIVER, str(task), str(tmp_path / "nodes")], env=env,
        capture_output=True, text=True, timeout=300, check=False)
    line = next((line for line in completed.stdout.splitlines() if line.startswith("SEEN ")),
                None)
    assert line is not None, completed.stderr[-3000:]
    seen = json.loads(line.removeprefix("SEEN "))
    assert [status for status, _, _ in seen] == ["ok"] * 4
    for _, visible, leased in seen:
        assert visible in ("0", "1") and leased == [visible]
