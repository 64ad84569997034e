"""A Ray worker process keeps the evaluator of one plan, the latest: an evaluator a new plan
supersedes is closed, so its warm worker's fork server does not run on until the process exits."""

from __future__ import annotations

import os
from pathlib import Path

import ray
from ray_helpers import LocalRayCluster, children_naming
from support.scripted_llm import write_counter_task

from cambrian.evaluate.distributed import worker
from cambrian.evaluate.distributed.plans import JudgePlan, Plan, make_plan
from cambrian.evaluate.judge.factory import build_judged_evaluator
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


def test_a_judge_plan_ships_no_held_out_case(tmp_path: Path):
    """Workers judge the public cases only: the held-out files (inputs, and the answers beside
    them) never reach a node, and the worker's judge declares none."""
    task = tmp_path / "task"
    for folder, name, text in (("public", "a.in", "1\n"), ("private", "b.in", "2\n"),
                               ("private", "b.out", "2\n")):
        (task / folder).mkdir(parents=True, exist_ok=True)
        (task / folder / name).write_text(text)
    (task / "score.py").write_text("def score(input_text, output_text):\n    return 1.0\n")
    judge = build_judged_evaluator(task, {"language": "python", "public_cases": "public",
                                          "private_cases": "private"}, run_dir=tmp_path / "run")
    plan = make_plan(judge, str(tmp_path / "workers"))

    assert isinstance(plan, JudgePlan)
    assert sorted(f.relative for f in plan.bundle.files) == ["public/a.in", "score.py"]
    assert plan.judge.private_cases is None and plan.judge.private_seeds is None
    assert plan.judge.public_cases == "public"


def test_a_warm_up_readies_the_evaluator_that_the_next_job_uses(
        tmp_path: Path, ray_cluster: LocalRayCluster, two_workers: list[str]):
    """``warm_up_job`` builds the plan's evaluator and starts its warm worker before any
    evaluation; the process's next evaluation uses that same fork server."""
    task = write_counter_task(tmp_path / "task")
    settings = EvaluatorSettings(task / "evaluate.py", cwd=task, warm_worker=True)
    plan = make_plan(ProgramEvaluator(settings), str(tmp_path / "workers"))
    source = (task / "initial.py").read_text()

    def warm_up_then_evaluate(plan: Plan) -> tuple[list[str], str, list[str]]:
        """Defined here, so that Ray ships it by value (with no import of the test helpers)."""

        def fork_servers() -> list[str]:
            found = []
            for entry in Path("/proc").iterdir():
                try:
                    status = (entry / "status").read_text()
                    command = (entry / "cmdline").read_bytes().decode(errors="replace")
                except OSError:
                    continue
                if f"PPid:\t{os.getpid()}\n" in status and "fork_server.py" in command:
                    found.append(entry.name)
            return found

        worker.warm_up_job(plan)
        servers = fork_servers()
        result, _ = worker.run_program_job(plan, source)
        return servers, f"{result.status} {result.error}".strip(), fork_servers()

    ray.init(address=ray_cluster.address, logging_level="ERROR", log_to_driver=False)
    try:
        job = ray.remote(warm_up_then_evaluate).options(num_cpus=1, max_retries=0)
        before, status, after = ray.get(job.remote(plan))
        assert len(before) == 1 and status == "ok" and after == before
    finally:
        ray.shutdown()
