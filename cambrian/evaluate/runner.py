"""Evaluate one candidate program's source with a task's evaluator, under sandbox limits.

Each evaluation runs in its own scratch folder (the `work_dir` the caller passes), which is
also its working directory: it is emptied, the task's files are copied in and checked against
the hashes taken when the evaluator was built (`task_files.py`; a change raises
TaskFilesChanged), the program is written next to them, and the contained evaluator may
write only there (`sandbox.py`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cambrian.core.evaluation import EvaluationResult
from cambrian.evaluate.containment import DEFAULT_DISK_LIMIT_MB, ContainmentPolicy
from cambrian.evaluate.contracts import (
    MODULE_RUNNER_PATH,
    ContractName,
    SandboxLimits,
    detect_contract,
    run_command_contract,
    run_module_contract,
)
from cambrian.evaluate.devices import (
    DevicePool,
    NoDeviceError,
    device_env,
    missing_gpu_message,
)
from cambrian.evaluate.module_runner import CASCADE_MODULE_NAME
from cambrian.evaluate.network import resolve_destinations
from cambrian.evaluate.peer_helpers import with_peer_helpers
from cambrian.evaluate.sandbox import WarmWorkerLost
from cambrian.evaluate.task_files import TaskFiles, TaskFilesChanged  # noqa: F401 - re-exported
from cambrian.evaluate.warm_worker import WarmWorker, local_module_names, preload_names
from cambrian.task.program_files import check_relative, write_program

log = logging.getLogger(__name__)

RESULTS_DIRNAME = "results"


@dataclass
class EvaluatorSettings:
    evaluator_path: Path
    contract: Literal["auto", "module", "command"] = "auto"
    timeout_s: float = 60.0
    memory_limit_mb: int | None = 4096
    cpu_time_limit_s: float | None = None
    max_output_bytes: int = 64_000
    python: str = sys.executable
    program_filename: str = "program.py"
    # Passed to command-contract evaluators as `--key value`.
    extra_args: dict[str, str] = field(default_factory=dict)
    # Added to the allow-listed environment (and the sandbox's thread caps); these win.
    env: dict[str, str] = field(default_factory=dict)
    # The task folder, whose files are copied (read-only, hash-checked) into every
    # evaluation's scratch folder; None means the evaluator's own folder.
    cwd: Path | None = None
    # Values never passed to the evaluation (API keys), whichever variable holds them.
    secret_values: frozenset[str] = frozenset()
    # Network namespace for evaluations (on by default): no network but the "HOST:PORT"
    # destinations of `network_allow` (resolved when the evaluator is built).
    isolate_network: bool = True
    network_allow: tuple[str, ...] = ()
    # What one evaluation may add to its scratch folder, in MB (None: no quota).
    disk_limit_mb: int | None = DEFAULT_DISK_LIMIT_MB
    # OpenEvolve's cascade (module contract): "auto"/"on" run evaluate_stage1/2/3 when the
    # evaluator defines them, "off" never (cascade_stages.py).
    cascade: Literal["auto", "on", "off"] = "auto"
    cascade_thresholds: tuple[float, ...] = (0.5, 0.75, 0.9)
    # Evaluate in a warm interpreter (warm_worker.py: forked per evaluation, same containment)
    # instead of starting a fresh one each time.
    warm_worker: bool = False
    # GPUs each evaluation holds (devices.py); 0: it sees none. `gpu_ids`: the GPUs to lease
    # from (None: those each job brings, `pin_gpus`, as on Ray); `share_gpus`: concurrent
    # evaluations may hold the same GPU.
    gpus: int = 0
    share_gpus: bool = False
    gpu_ids: tuple[str, ...] | None = None


class ProgramEvaluator:
    def __init__(self, settings: EvaluatorSettings) -> None:
        self.settings = settings
        self.evaluator_path = Path(settings.evaluator_path).resolve()
        if not self.evaluator_path.is_file():
            raise FileNotFoundError(f"evaluator not found: {self.evaluator_path}")
        try:  # a bare name, or the entry of a program of several files (pkg/main.py)
            check_relative(settings.program_filename)
        except ValueError:
            raise ValueError(f"program_filename must be a relative path inside the "
                             f"evaluation folder, got {settings.program_filename!r}") from None
        self.contract: ContractName = self._resolve_contract(settings.contract)
        self.cwd = Path(settings.cwd).resolve() if settings.cwd else self.evaluator_path.parent
        self.task_files = TaskFiles.snapshot(self.cwd, self.evaluator_path)
        env = dict(settings.env)
        if self.contract == "command":
            env = with_peer_helpers(env, self.evaluator_path, settings.python)
        self.limits = SandboxLimits(
            timeout_s=settings.timeout_s,
            memory_limit_mb=settings.memory_limit_mb,
            cpu_time_limit_s=settings.cpu_time_limit_s,
            max_output_bytes=settings.max_output_bytes,
            env=env,
            secret_values=frozenset(settings.secret_values),
            containment=ContainmentPolicy(
                isolate_network=settings.isolate_network,
                network_allow=resolve_destinations(settings.network_allow),
                disk_limit_mb=settings.disk_limit_mb),
        )
        self.devices: DevicePool | None = None
        if settings.gpus > 0:
            if settings.gpu_ids is not None:
                self.pin_gpus(settings.gpu_ids)
            # The memory limit bounds the resident size instead of the address space.
            self.limits = dataclasses.replace(
                self.limits, memory_limit_mb=None,
                containment=dataclasses.replace(self.limits.containment or ContainmentPolicy(),
                                                resident_limit_mb=settings.memory_limit_mb))
        else:
            self.limits = dataclasses.replace(self.limits, env={**device_env(()), **env})
        self.warm: WarmWorker | None = self._warm_worker() if settings.warm_worker else None
        self._cold_limits = self.limits
        if self.warm is not None:
            self.limits = dataclasses.replace(self.limits, warm=self.warm)

    def pin_gpus(self, gpus: Sequence[str]) -> None:
        """Lease from `gpus` from now on (a Ray job's own, as Ray assigned them)."""
        if self.settings.gpus > 0:
            self.devices = DevicePool(gpus, self.settings.gpus, share=self.settings.share_gpus)

    def _warm_worker(self) -> WarmWorker:
        """Preloads what the evaluator's script imports, never a name its folder holds."""
        folder = Path(self.task_files.relative_path(self.evaluator_path)).parent.as_posix()
        local = local_module_names((f.relative for f in self.task_files.files),
                                   "" if folder == "." else folder,
                                   Path(self.settings.program_filename).stem)
        cascade = MODULE_RUNNER_PATH.with_name("cascade_stages.py")
        module = self.contract == "module"
        scripts = [MODULE_RUNNER_PATH, cascade, self.evaluator_path] if module else [
            self.evaluator_path]
        return WarmWorker(self.settings.python, preload_names(scripts, local), local,
                          self.limits.env, self.limits.secret_values,
                          own_scripts=[MODULE_RUNNER_PATH] if module else [],
                          own_modules={CASCADE_MODULE_NAME: cascade} if module else {})

    async def close(self) -> None:
        """End the warm worker, if any (evaluations started afterwards start it again)."""
        if self.warm is not None:
            await self.warm.close()

    def _resolve_contract(self, contract: str) -> ContractName:
        if contract == "auto":
            return detect_contract(self.evaluator_path)
        if contract in ("module", "command"):
            return contract  # type: ignore[return-value]
        raise ValueError(f"contract must be 'auto', 'module' or 'command', got {contract!r}")

    def _fresh_scratch(self, work_dir: Path) -> Path:
        if work_dir.is_dir() and not work_dir.is_symlink():
            shutil.rmtree(work_dir)
        elif work_dir.exists() or work_dir.is_symlink():
            work_dir.unlink()
        work_dir.mkdir(parents=True)
        work_dir = work_dir.resolve()
        self.task_files.materialize(work_dir)
        return work_dir

    async def evaluate(self, source: str, work_dir: Path) -> EvaluationResult:
        """Writes `source` into work_dir, runs the evaluator on it and returns its verdict
        (again cold, from a fresh scratch folder, if the warm worker died meanwhile). A task
        that asks for GPUs waits for its own first (`devices.py`)."""
        if self.settings.gpus > 0 and self.devices is None:
            raise NoDeviceError(missing_gpu_message(self.settings.gpus, []))
        if self.devices is None:
            return await self._evaluate_once(source, work_dir, self.limits, self._cold_limits)
        async with self.devices.lease() as gpus:
            pinned = [dataclasses.replace(limits, env={**limits.env, **device_env(gpus)})
                      for limits in (self.limits, self._cold_limits)]
            result = await self._evaluate_once(source, work_dir, *pinned)
        result.extra["gpus"] = list(gpus)
        return result

    async def _evaluate_once(self, source: str, work_dir: Path, limits: SandboxLimits,
                             cold_limits: SandboxLimits) -> EvaluationResult:
        try:
            return await self._evaluate(source, work_dir, limits)
        except WarmWorkerLost as lost:
            log.warning("%s; evaluating %s again in a fresh interpreter", lost, work_dir)
            return await self._evaluate(source, work_dir, cold_limits)

    async def _evaluate(self, source: str, work_dir: Path,
                        limits: SandboxLimits) -> EvaluationResult:
        """Writes `source` into work_dir, runs the evaluator on it and returns its verdict.

        work_dir is emptied first (stale results, or links an earlier candidate left there,
        can never be read back or written through), then filled with the verified task files.
        Raises TaskFilesChanged when a task file changed since the evaluator was built.
        """
        work_dir = await asyncio.to_thread(self._fresh_scratch, Path(os.path.abspath(work_dir)))
        evaluator_path = work_dir / self.task_files.relative_path(self.evaluator_path)
        # Every file of the program at its path (the entry is the program path).
        program_path = write_program(work_dir, source, self.settings.program_filename)
        results_dir = work_dir / RESULTS_DIRNAME
        if results_dir.exists():
            shutil.rmtree(results_dir)
        results_dir.mkdir()
        if self.contract == "module":
            return await run_module_contract(
                evaluator_path=evaluator_path,
                program_path=program_path,
                results_dir=results_dir,
                cwd=work_dir,
                python=self.settings.python,
                limits=limits,
                cascade_thresholds=(None if self.settings.cascade == "off"
                                    else self.settings.cascade_thresholds),
            )
        return await run_command_contract(
            evaluator_path=evaluator_path,
            program_path=program_path,
            results_dir=results_dir,
            cwd=work_dir,
            python=self.settings.python,
            limits=limits,
            extra_args=self.settings.extra_args,
        )
