"""What a Ray worker builds to evaluate: a plan made on the driver from the driver's evaluator,
shipped once (``ray.put``), turned into an evaluator once per worker process (``worker.py``).

- ``ProgramPlan``: a task's own evaluator script (``ProgramEvaluator``), rebuilt on the worker
  from the same settings in a node-local copy of the task folder.
- ``JudgePlan``: a judged task; the worker rebuilds the plain judge (compile, run cases, score)
  in its copy (without the held-out cases: they never leave the driver), with the compile
  cache and generated cases kept per node. Stages, aggregation and
  the remote scorer stay on the driver (``judge.py``).
- ``ObjectPlan``: any other evaluator (a plugin's, one set in code), shipped pickled as it is.

API keys never travel in a plan: it names the variables that hold them (the models'
``api_key_env``), and each worker withholds those variables' values, as found in its own
environment, from every sandboxed command, as the driver does (``child_env.py``).
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

from cambrian.config.judge import JudgeConfig
from cambrian.evaluate.distributed.bundle import TaskBundle
from cambrian.evaluate.judge.evaluator import JudgedEvaluator
from cambrian.evaluate.judge.tiers import TieredEvaluator
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator
from cambrian.evaluate.task_files import TaskFiles


@dataclass(frozen=True)
class WorkerSetup:
    key: str  # names the built evaluator in each worker process
    worker_dir: str | None  # execution.worker_dir
    secret_env: tuple[str, ...] = ()  # variables whose values are API keys


@dataclass(frozen=True)
class ProgramPlan:
    setup: WorkerSetup
    bundle: TaskBundle
    settings: EvaluatorSettings  # the driver's; paths are replaced by the worker's copy
    evaluator_relative: str  # the evaluator script inside the copy


@dataclass(frozen=True)
class JudgePlan:
    setup: WorkerSetup
    bundle: TaskBundle
    judge: JudgeConfig  # max_parallel_cases: what one job's CPUs allow
    direction: str


@dataclass(frozen=True)
class ObjectPlan:
    setup: WorkerSetup
    evaluator: Any


Plan = ProgramPlan | JudgePlan | ObjectPlan


def judge_of(evaluator: Any) -> JudgedEvaluator | None:
    """The judge a judged task's evaluator runs (plain, or inside tiered stages)."""
    if isinstance(evaluator, TieredEvaluator):
        return evaluator.judge
    return evaluator if isinstance(evaluator, JudgedEvaluator) else None


def make_plan(evaluator: Any, worker_dir: str | None, parallel_cases: int = 1,
              secret_env: tuple[str, ...] = ()) -> Plan:
    setup = WorkerSetup(uuid.uuid4().hex, worker_dir, secret_env)
    if isinstance(evaluator, ProgramEvaluator):
        settings = dataclasses.replace(evaluator.settings, evaluator_path=evaluator.evaluator_path,
                                       cwd=evaluator.cwd)
        return ProgramPlan(setup, TaskBundle.of(evaluator.task_files), settings,
                           evaluator.task_files.relative_path(evaluator.evaluator_path))
    judge = judge_of(evaluator)
    if judge is not None:
        task = judge.task
        # Workers judge the public cases only: the held-out ones stay on the driver (their
        # files are not shipped, and the worker's judge declares none).
        files = TaskFiles.snapshot(task.root, task.scorer_path, exclude=task.private_paths)
        config = task.config.model_copy(update={"max_parallel_cases": max(1, parallel_cases),
                                                "private_cases": None, "private_seeds": None})
        return JudgePlan(setup, TaskBundle.of(files), config, task.direction)
    return ObjectPlan(setup, evaluator)
