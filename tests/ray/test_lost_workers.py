"""A job that loses its worker more often than ``execution.max_retries`` allows fails its
evaluation, and only that (no cluster needed: the jobs here lose their worker by themselves)."""

from __future__ import annotations

from pathlib import Path

import pytest
import ray
from ray import exceptions as ray_errors
from ray_helpers import Losing

from cambrian.config import ExecutionConfig
from cambrian.core.evaluation import EvaluationResult
from cambrian.evaluate.distributed.cluster import RayCluster, WorkerLost
from cambrian.evaluate.distributed.executor import RayExecutor
from cambrian.evaluate.executor import EvaluationJob

NODE = "ab12cd34" + "0" * 48
OOM = (f"Task was killed due to the node running low on memory.\nMemory on the node (IP: "
       f"10.0.0.7, ID: {NODE}) where the task was running was 7.60GB / 8.00GB (0.95)")


def settings(max_retries: int) -> ExecutionConfig:
    return ExecutionConfig(backend="ray", max_retries=max_retries)


class Evaluator:
    async def evaluate(self, source: str, work_dir: Path) -> EvaluationResult:
        raise AssertionError("runs on the workers only")


async def test_a_job_lost_too_often_says_whether_it_ran_out_of_memory():
    cluster = RayCluster(settings(max_retries=2))
    oom = Losing(ray_errors.OutOfMemoryError(OOM))
    with pytest.raises(WorkerLost) as caught:
        await cluster.call(oom, what="candidate 3")
    assert oom.submitted == 3 and len(cluster.lost) == 3
    assert caught.value.out_of_memory and caught.value.attempts == 3
    assert caught.value.last.startswith("OutOfMemoryError: Task was killed")
    with pytest.raises(WorkerLost) as caught:
        await cluster.call(Losing(ray_errors.WorkerCrashedError()), what="candidate 4")
    assert not caught.value.out_of_memory


def executor_losing(error: Exception, monkeypatch: pytest.MonkeyPatch) -> RayExecutor:
    executor = RayExecutor(Evaluator(), settings(max_retries=1))
    monkeypatch.setattr(executor, "_plan", lambda: "plan")
    executor._program = Losing(error)
    return executor


async def test_a_candidate_whose_worker_ran_out_of_memory_fails_for_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(ray, "nodes", lambda: [{"NodeID": NODE, "NodeManagerHostname": "gpu7"}])
    executor = executor_losing(ray_errors.OutOfMemoryError(OOM), monkeypatch)
    outcome = await executor.run(EvaluationJob("print(1)", tmp_path / "work", 12))
    assert outcome.result.status == "memory" and not outcome.result.correct
    assert outcome.result.error.startswith(
        "the Ray worker evaluating it was lost 2 times; last: OutOfMemoryError: Task was killed")
    assert outcome.worker == "gpu7/ab12cd34"  # the node Ray's error names


async def test_a_candidate_whose_worker_crashed_fails_as_crashed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    executor = executor_losing(ray_errors.WorkerCrashedError(), monkeypatch)
    outcome = await executor.run(EvaluationJob("print(1)", tmp_path / "work", 12))
    assert outcome.result.status == "crashed"
    assert "lost 2 times; last: WorkerCrashedError: The worker died" in outcome.result.error
    assert outcome.worker == "ray"  # Ray did not say where
