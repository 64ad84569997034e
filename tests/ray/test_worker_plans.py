"""A Ray worker process keeps the evaluator of one plan, the latest: an evaluator a new plan
supersedes is closed, so its warm worker's fork server does not run on until the process exits."""

from __future__ import annotations

import os
from pathlib import Path

import ray
from ray_helpers import LocalRayCluster, children_naming
from support.scripted_llm import write_counter_task

from cambrian.evaluate.distributed import worker
from cambrian.evaluate.distributed.plans import Plan, make_plan
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator


def test_a_new_plan_closes_the_warm_worker_of_the_one_before(
        tmp_path: Path, ray_cluster: LocalRayCluster, two_workers: list[str]):
    task = write_counter_task(tmp_path / "task")
    settings = EvaluatorSettings(task / "evaluate.py", cwd=task, warm_worker=True)
    plans = [make_plan(ProgramEvaluator(settings), str(tmp_path / "workers")) for _ in range(2)]
    source = (task / "initial.py").read_text()

    def two_plans_in_a_row(first: Plan, second: Plan) -> tuple[list[str], int]:
        """One evaluation per plan in one Ray worker process, and its pid. (Defined here, so
        that Ray ships it by value: the workers cannot import this test module.)"""
        results = [worker.run_program_job(plan, source)[0] for plan in (first, second)]
        return [f"{result.status} {result.error}".strip() for result in results], os.getpid()

    ray.init(address=ray_cluster.address, logging_level="ERROR", log_to_driver=False)
    try:
        job = ray.remote(two_plans_in_a_row).options(num_cpus=1, max_retries=0)
        statuses, pid = ray.get(job.remote(*plans))
        assert statuses == ["ok", "ok"]
        # The second plan's fork server is running (it serves that plan's next job), and it
        # alone: the first plan's ended when the second plan's evaluator was built.
        assert len(children_naming(pid, "fork_server.py")) == 1
    finally:
        ray.shutdown()
