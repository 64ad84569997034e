"""Evolutions whose evaluations run on a real Ray cluster (a head and two worker nodes on this
machine, see conftest.py): real sandboxed evaluations on the workers, the real store on the
driver, the real OpenAI-compatible provider over HTTP with scripted replies."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import ray
from ray_helpers import LocalRayCluster, processes_naming, watching, worker_label
from support.scripted_llm import CODE_BLOCK, ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql

from cambrian.api import resume, run_status, start
from cambrian.config.loading import read_config_file
from cambrian.core.events import CandidateEvaluated, Event
from cambrian.core.status import EVALUATED
from cambrian.evaluate.judge import build_task_evaluator
from cambrian.store.store import Store, StoreError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "heuristic_contest"


def ray_sets(llm: ScriptedLLM, cluster: LocalRayCluster, workers: Path, generations: int,
             *more: str) -> list[str]:
    return [f"evolution.generations={generations}",
            "llm.models=[" + json.dumps(llm.model_config()) + "]",
            "evolution.max_parallel_evaluations=2", "novelty.enabled=false",
            "meta.enabled=false", "execution.backend=ray",
            f"execution.ray_address={cluster.address}", f"execution.worker_dir={workers}", *more]


def main_rows(store: Store) -> dict[int, int]:
    """Candidate id -> its number of ``main`` evaluation rows."""
    return {int(c): int(n) for c, n in sql(
        store, "SELECT candidate_id, COUNT(*) FROM evaluations WHERE stage='main' "
               "GROUP BY candidate_id")}


def assert_each_evaluated_once(store: Store, children: int) -> None:
    rows = main_rows(store)
    evaluated = [r.id for r in store.candidates.list() if r.status in EVALUATED]
    assert set(rows) == set(evaluated)
    assert all(count == 1 for count in rows.values()), rows
    assert len([c for c in evaluated if c != 1]) == children
    assert store.candidates.count("pending") == 0


@dataclass
class KillDuringNextJob:
    """A subscriber that kills the node that ran the ``after``-th evaluation to commit while it
    runs its next job: that node is free then and takes the next job at once (the task's
    evaluation takes 2 s, the kill comes 0.7 s after the commit)."""

    cluster: LocalRayCluster
    nodes: list[str]
    after: int = 3
    evolution: Any = None  # set once the run is started
    commits: list[int] = field(default_factory=list)
    node: str = ""  # the node killed

    def __call__(self, event: Event) -> None:
        if not isinstance(event, CandidateEvaluated):
            return
        self.commits.append(event.candidate_id)
        if len(self.commits) == self.after:
            worker = self.evolution.store.evaluations.worker_of(event.candidate_id)
            self.node = next(n for n in self.nodes if worker_label(n) == worker)
            threading.Timer(0.7, self.cluster.kill_worker, (self.node,)).start()


def test_a_killed_worker_node_loses_and_double_counts_nothing(
        tmp_path: Path, ray_cluster: LocalRayCluster, two_workers: list[str]):
    task = write_counter_task(tmp_path / "task", sleep=2.0)
    kill = KillDuringNextJob(ray_cluster, two_workers)
    with ScriptedLLM(incrementing) as llm:
        evolution = kill.evolution = start(
            task, run_dir=tmp_path / "run", subscribers=[kill],
            overrides=ray_sets(llm, ray_cluster, tmp_path / "workers", 7))
        summary = asyncio.run(evolution.run())
        evolution.store.close()

    assert summary.evaluations == 7 and summary.stop_reason == "generation budget reached"
    lost = evolution.executor.lost
    assert lost, "the killed node was running a job"
    store = Store.open(tmp_path / "run")
    assert_each_evaluated_once(store, children=7)
    survivor = next(n for n in two_workers if n != kill.node)
    workers = store.evaluations.workers()
    assert set(workers) == {worker_label(survivor), worker_label(kill.node)}
    assert run_status(tmp_path / "run").workers == workers  # what `cambrian status` shows
    # The lost job was run again, on the node still alive, and committed once.
    retried = int(lost[0].what.split()[-1])
    assert main_rows(store)[retried] == 1
    assert store.evaluations.worker_of(retried) == worker_label(survivor)
    store.close()


def test_a_job_that_loses_its_worker_too_often_fails_its_candidate_not_the_run(
        tmp_path: Path, ray_cluster: LocalRayCluster, two_workers: list[str]):
    task = write_counter_task(tmp_path / "task", sleep=2.0)
    kill = KillDuringNextJob(ray_cluster, two_workers)
    with ScriptedLLM(incrementing) as llm:
        evolution = kill.evolution = start(
            task, run_dir=tmp_path / "run", subscribers=[kill], overrides=ray_sets(
                llm, ray_cluster, tmp_path / "workers", 7, "execution.max_retries=0"))
        summary = asyncio.run(evolution.run())
        evolution.store.close()

    assert summary.evaluations == 7 and summary.stop_reason == "generation budget reached"
    (lost,) = evolution.executor.lost  # not resubmitted
    failed = int(lost.what.split()[-1])
    store = Store.open(tmp_path / "run")
    assert_each_evaluated_once(store, children=7)
    assert store.candidates.get(failed).status == "incorrect"
    result = store.evaluations.latest(failed, "main")
    assert result is not None and result.status == "crashed"
    assert result.error.startswith("the Ray worker evaluating it was lost 1 time; last: ")
    assert kill.node in result.error  # Ray's error names the node that died
    assert store.evaluations.worker_of(failed) == worker_label(kill.node)
    store.close()


def test_a_hanging_candidate_is_killed_by_its_limit_on_a_worker(
        tmp_path: Path, ray_cluster: LocalRayCluster, two_workers: list[str]):
    task = write_counter_task(tmp_path / "task")

    def hanging(messages: list[dict[str, str]], index: int) -> str:
        return "Wait\n```python\nimport time\nwhile True:\n    time.sleep(1)\n```\n"

    with ScriptedLLM(hanging) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=ray_sets(
            llm, ray_cluster, tmp_path / "workers", 1, "evaluation.timeout_s=3",
            "evolution.patch_types=[full]", "evolution.patch_type_probs=[1.0]"))
        began = time.monotonic()
        with watching(str(tmp_path / "workers")) as running:
            summary = asyncio.run(evolution.run())
        elapsed = time.monotonic() - began
        evolution.store.close()

    assert summary.evaluations == 1 and elapsed < 60
    # The leak check below sees an evaluation while it runs (a warm-forked one included)...
    assert any("fork_server.py" in process for process in running), running
    store = Store.open(tmp_path / "run")
    child = next(r for r in store.candidates.list() if r.id != 1)
    assert child.status == "incorrect"
    result = store.evaluations.latest(child.id, "main")
    assert result is not None and result.status == "timeout"
    assert "wall-clock limit of 3 s" in result.error and result.duration_s < 10
    assert store.evaluations.worker_of(child.id) in {worker_label(n) for n in two_workers}
    store.close()
    # ... and, killed, not left running, none survives.
    assert processes_naming(str(tmp_path / "workers")) == []


PRIORITY_LINE = "return (double)value / steps_there;"
LINES = [PRIORITY_LINE, "return value / (steps_there + 0.5 * steps_back);",
         "return (double)value * value / steps_there;",
         "return value / std::pow((double)steps_there, 2.0);"]


def ratio_tweak(messages: list[dict[str, str]], index: int) -> str:
    """Replace the parent's priority line with another one (the parent may be a child)."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    code = CODE_BLOCK.search(user)
    assert code, "prompt has no current program"
    current = next(line for line in LINES if line in code.group(1))
    others = [line for line in LINES if line != current]
    return ("Weigh the way back\n<<<<<<< SEARCH\n"
            f"    {current}\n=======\n    {others[index % len(others)]}\n>>>>>>> REPLACE\n")


def comparable(result: Any) -> dict[str, Any]:
    """A judged result without its timings and its compile-cache note."""
    cases = [{k: v for k, v in case.items() if k != "time_s"} for case in result.extra["cases"]]
    return {"status": result.status, "score": result.combined_score, "public": result.public,
            "error": result.error, "cases": cases, "verdicts": result.extra["verdicts"],
            "skipped": result.extra["skipped_cases"]}


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_a_judged_contest_task_fans_its_cases_out(
        tmp_path: Path, ray_cluster: LocalRayCluster, two_workers: list[str]):
    judge = ["judge.public_seeds=[0,7]", "judge.tiers.quick_cases=2",
             "trace_feedback.tune_operator=false", "evolution.patch_types=[diff]",
             "evolution.patch_type_probs=[1.0]"]
    with ScriptedLLM(ratio_tweak) as llm:
        evolution = start(EXAMPLE, run_dir=tmp_path / "run", overrides=ray_sets(
            llm, ray_cluster, tmp_path / "workers", 3, *judge))
        summary = asyncio.run(evolution.run())
        evolution.store.close()
    assert summary.evaluations == 3

    store = Store.open(tmp_path / "run")
    assert_each_evaluated_once(store, children=3)
    stages = [stage for stage, _, _ in store.evaluations.stages(1)]
    assert stages == ["quick", "full", "main"]
    # The initial program's cases ran on both worker nodes ...
    assert set(store.evaluations.worker_of(1).split(",")) == {worker_label(n) for n in two_workers}
    # ... and it got the result the local judge gives it, field for field.
    config = read_config_file(EXAMPLE / "config.yaml")["judge"]
    config.update(public_seeds=[0, 7], tiers={"quick_cases": 2, "quick_threshold": 0.9})
    local = build_task_evaluator(EXAMPLE, config, run_dir=tmp_path / "local",
                                 best_reference=lambda: None)
    expected = asyncio.run(local.evaluate((EXAMPLE / "initial.cpp").read_text(),
                                          tmp_path / "local-work"))
    stored = store.evaluations.latest(1, "main")
    assert comparable(stored) == comparable(expected)
    assert stored.text_feedback.split("\n")[0] == expected.text_feedback.split("\n")[0]
    # Each node compiled each program at most once (a compile job, then chunks of two stages).
    judged = {row.source for row in store.candidates.list() if row.id in main_rows(store)}
    compilations = evolution.executor.compilations
    assert compilations and all(count <= len(judged) for count in compilations.values())
    store.close()


def test_a_killed_driver_resumes_with_nothing_lost_or_counted_twice(
        tmp_path: Path, ray_cluster: LocalRayCluster, two_workers: list[str]):
    task = write_counter_task(tmp_path / "task", sleep=1.5)
    run_dir = tmp_path / "run"
    with ScriptedLLM(incrementing) as llm:
        sets = ray_sets(llm, ray_cluster, tmp_path / "workers", 6)
        driver = subprocess.Popen(
            [sys.executable, "-m", "cambrian", "run", str(task), "--run-dir", str(run_dir), "-q",
             *(arg for s in sets for arg in ("--set", s))],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 180
        committed = 0
        while committed < 3:
            if driver.poll() is not None:
                pytest.fail(driver.stderr.read().decode()[-2000:])  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the driver committed too little"
            time.sleep(0.2)
            try:
                store = Store.open(run_dir, read_only=True)
            except (FileNotFoundError, StoreError):  # not created, or not migrated, yet
                continue
            committed = sum(main_rows(store).values())
            store.close()
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()

        store = Store.open(run_dir, read_only=True)
        before = main_rows(store)
        store.close()
        evolution = resume(run_dir)
        summary = asyncio.run(evolution.run())
        evolution.store.close()

    assert summary.evaluations == 6 and sum(before.values()) < 7  # the kill left work to do
    store = Store.open(run_dir)
    assert_each_evaluated_once(store, children=6)
    after = main_rows(store)
    assert all(after[c] == 1 for c in before)  # nothing committed before the kill came back
    store.close()
    # The killed driver's jobs died with it (Ray ends a dead driver's tasks; the sandbox's
    # parent-death signal ends what they ran).
    assert processes_naming(str(tmp_path / "workers")) == []


def test_a_run_starts_its_own_local_cluster(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "evolution.generations=2", "llm.models=[" + json.dumps(llm.model_config()) + "]",
            "novelty.enabled=false", "meta.enabled=false", "execution.backend=ray",
            "execution.num_cpus=1", f"execution.worker_dir={tmp_path / 'workers'}"])
        summary = asyncio.run(evolution.run())
        evolution.store.close()
    assert summary.evaluations == 2
    store = Store.open(tmp_path / "run")
    assert_each_evaluated_once(store, children=2)
    (worker,) = store.evaluations.workers()
    assert worker != "local" and "/" in worker
    store.close()
    assert not ray.is_initialized()  # the run stopped the cluster it started
