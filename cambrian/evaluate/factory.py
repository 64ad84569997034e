"""The ``default`` evaluator component (see :mod:`cambrian.core.components`), and the one place
that builds a run's evaluator from its task and configuration."""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from cambrian.config import ConfigError, DevicesConfig, RunConfig
from cambrian.core.components import make_component, register_component
from cambrian.core.objective import Objective
from cambrian.core.plugins import load_plugins
from cambrian.evaluate.devices import missing_gpu_message, visible_gpus
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator
from cambrian.store.store import Store
from cambrian.task.folder import Task

log = logging.getLogger(__name__)
_fallbacks_said: set[str] = set()


def default_evaluator(*, task: Task, config: RunConfig, run_dir: Path, store: Store) -> Any:
    """The task's evaluator: its own script, or the judge built from its ``judge:`` section."""
    if config.judge is not None:
        from cambrian.evaluate.judge import build_task_evaluator, reference_from_store

        objective = Objective.of(task.direction)
        return build_task_evaluator(
            task.root, config.judge, run_dir=run_dir, task_direction=task.direction,
            best_reference=lambda: reference_from_store(store, objective),
        )
    ev = config.evaluation
    # On Ray, each job leases the GPUs Ray gave it (worker.py); here, this machine's.
    gpus, gpu_ids = ((ev.devices.gpu, None) if config.execution.backend == "ray"
                     else device_request(ev.devices))
    return ProgramEvaluator(EvaluatorSettings(
        evaluator_path=task.evaluator_path,
        contract=task.contract,
        timeout_s=ev.timeout_s,
        memory_limit_mb=ev.memory_limit_mb,
        cpu_time_limit_s=ev.cpu_time_limit_s,
        max_output_bytes=ev.max_output_bytes,
        program_filename=task.program_filename,
        extra_args=dict(ev.extra_args),
        env=dict(ev.env),
        cwd=task.root,
        python=evaluation_python(ev.python),
        cascade=ev.cascade,
        cascade_thresholds=tuple(ev.cascade_thresholds),
        warm_worker=ev.warm_worker,
        isolate_network=ev.isolate_network,
        network_allow=tuple(ev.network_allow),
        disk_limit_mb=ev.disk_limit_mb,
        gpus=gpus,
        gpu_ids=gpu_ids,
        share_gpus=ev.devices.share,
    ))


def device_request(devices: DevicesConfig) -> tuple[int, tuple[str, ...] | None]:
    """(GPUs per evaluation, the GPUs to lease them from) on this machine. A task asking for
    more than the machine offers is a ConfigError, or evaluates without a GPU when its
    ``fallback`` is ``cpu`` (said once, as a warning)."""
    if devices.gpu == 0:
        return 0, None
    visible = visible_gpus()
    if len(visible) >= devices.gpu:
        return devices.gpu, tuple(visible)
    message = missing_gpu_message(devices.gpu, visible)
    if devices.fallback == "cpu":
        if message not in _fallbacks_said:
            _fallbacks_said.add(message)
            log.warning("%s; evaluating without a GPU (evaluation.devices.fallback: cpu)",
                        message.split(";")[0])
        return 0, None
    raise ConfigError(message)


def evaluation_python(configured: str | None) -> str:
    """The interpreter evaluations run under: ``evaluation.python`` (a path or a name on
    PATH), else Cambrian's own."""
    if not configured:
        return sys.executable
    found = shutil.which(configured) if "/" not in configured else configured
    if found is None or not Path(found).is_file() or not os.access(found, os.X_OK):
        raise ConfigError(f"evaluation.python: '{configured}' is not an executable file "
                          "(give the path of a Python interpreter, e.g. /path/to/venv/bin/python)")
    return str(Path(found).absolute())


register_component("evaluator", "default", default_evaluator,
                   "the task's evaluate.py (module or command contract), or its judge: section")


def build_evaluator(task: Task, config: RunConfig, run_dir: Path, store: Store) -> Any:
    """The evaluator registered as ``search.evaluator`` (``default``: the task's own script,
    or the judge built from its ``judge:`` section)."""
    load_plugins(config.search.plugins)
    return make_component("evaluator", config.search.evaluator, task=task, config=config,
                          run_dir=run_dir, store=store)
