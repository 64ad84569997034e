"""Accelerators for evaluations: which GPUs this machine offers and which one each evaluation
holds.

A task asks for ``evaluation.devices.gpu`` GPUs per evaluation. :class:`DevicePool` leases
each running evaluation GPUs of its own, passed to it as ``CUDA_VISIBLE_DEVICES`` (an
evaluation that asked for none sees none), so no two evaluations time their kernels on one
GPU unless the task allows sharing; :func:`evaluation_slots` makes the number of concurrent
evaluations follow the number of GPUs. An evaluation holding a GPU runs under the same
sandbox except the address-space limit, which CUDA cannot live with (its driver maps the
device's memory into the process): its resident size is watched instead
(`ContainmentPolicy.resident_limit_mb`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

GPU_ENV = "CUDA_VISIBLE_DEVICES"
NVIDIA_DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")
LEASE_POLL_S = 0.05
NVIDIA_SMI_TIMEOUT_S = 20.0


class NoDeviceError(RuntimeError):
    """The task asks for more GPUs per evaluation than this machine offers."""


def visible_gpus(environ: Mapping[str, str] | None = None,
                 driver_gpus: Path = NVIDIA_DRIVER_GPUS) -> list[str]:
    """The GPUs Cambrian may hand out: those ``CUDA_VISIBLE_DEVICES`` names when it is set
    (the user narrowed the machine down; empty or -1: none), else every GPU the NVIDIA driver
    lists (``/proc/driver/nvidia/gpus``, else ``nvidia-smi -L``), as indices."""
    environ = os.environ if environ is None else environ
    if GPU_ENV in environ:
        named = [part.strip() for part in environ[GPU_ENV].split(",") if part.strip()]
        return [] if named and named[0].startswith("-") else named
    try:
        count = sum(1 for _ in driver_gpus.iterdir())
    except OSError:
        count = _nvidia_smi_count()
    return [str(index) for index in range(count)]


def _nvidia_smi_count() -> int:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False,
                                timeout=NVIDIA_SMI_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listed.stdout.splitlines() if line.startswith("GPU "))


def missing_gpu_message(wanted: int, visible: Sequence[str]) -> str:
    have = (f"only {len(visible)} ({', '.join(visible)})" if visible else
            "none (no NVIDIA driver lists a GPU, or CUDA_VISIBLE_DEVICES hides them)")
    return (f"evaluation.devices.gpu asks for {wanted} GPU(s) per evaluation, but this machine "
            f"offers {have}; run on a machine with a GPU, lower evaluation.devices.gpu, or set "
            "evaluation.devices.fallback: cpu to evaluate on the CPU")


def evaluation_slots(configured: int, gpus_per_evaluation: int, gpu_count: int,
                     share: bool) -> int:
    """Concurrent evaluations: as configured, but no more than the GPUs allow unshared."""
    if gpus_per_evaluation <= 0 or share:
        return configured
    return max(1, min(configured, gpu_count // gpus_per_evaluation))


class DevicePool:
    """Leases GPUs to evaluations: ``per_evaluation`` each, exclusively unless ``share``.

    Loop-agnostic (the same evaluator may serve several event loops): a lease that must wait
    polls, which costs nothing next to an evaluation's length.
    """

    def __init__(self, gpus: Sequence[str], per_evaluation: int, *, share: bool = False) -> None:
        if per_evaluation < 1:
            raise ValueError(f"per_evaluation must be at least 1, got {per_evaluation}")
        if per_evaluation > len(gpus):
            raise NoDeviceError(missing_gpu_message(per_evaluation, gpus))
        self.gpus = tuple(gpus)
        self.per_evaluation = per_evaluation
        self.share = share
        self._holders = dict.fromkeys(self.gpus, 0)
        self._lock = threading.Lock()

    def _try_take(self) -> tuple[str, ...] | None:
        with self._lock:
            ranked = sorted(self.gpus, key=lambda gpu: self._holders[gpu])
            if not self.share:
                ranked = [gpu for gpu in ranked if self._holders[gpu] == 0]
            if len(ranked) < self.per_evaluation:
                return None
            taken = tuple(sorted(ranked[:self.per_evaluation], key=self.gpus.index))
            for gpu in taken:
                self._holders[gpu] += 1
            return taken

    def _give_back(self, taken: Sequence[str]) -> None:
        with self._lock:
            for gpu in taken:
                self._holders[gpu] -= 1

    def in_use(self) -> dict[str, int]:
        with self._lock:
            return dict(self._holders)

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[tuple[str, ...]]:
        """The GPUs of one evaluation, held until the block ends (also on cancellation)."""
        taken = self._try_take()
        while taken is None:
            await asyncio.sleep(LEASE_POLL_S)
            taken = self._try_take()
        try:
            yield taken
        finally:
            self._give_back(taken)


def device_env(gpus: Sequence[str]) -> dict[str, str]:
    """The variables that pin an evaluation to `gpus` (none: it sees no GPU)."""
    return {GPU_ENV: ",".join(gpus)}


def relaxed_for_devices(memory_limit_mb: int | None, share: bool) -> list[str]:
    """What the sandbox of an evaluation holding a GPU gives up, and why (the run records it)."""
    watched = (f"its resident size is watched against {memory_limit_mb} MB instead"
               if memory_limit_mb is not None else "no memory limit is set")
    relaxed = ["no address-space limit for evaluations holding a GPU (CUDA maps the device's "
               f"memory into the process); {watched}"]
    if share:
        relaxed.append("concurrent evaluations may share a GPU (evaluation.devices.share): "
                       "their timings disturb each other")
    return relaxed
