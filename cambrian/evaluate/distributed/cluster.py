"""The driver's side of Ray: connect (or start a local cluster for the run), submit a job and
await it, resubmitting it when its worker or node is lost.

A job is idempotent (an evaluation of a source, or some of its test cases, in a fresh scratch
folder on the worker), so resubmitting one whose worker died is safe; the caller receives one
result per call, whatever the number of attempts, and commits it once. Ray's own task retries
are off (``max_retries=0``) so that every loss is seen, counted and logged here.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray
from ray import exceptions as ray_errors

from cambrian.config import ExecutionConfig

log = logging.getLogger(__name__)

# A job whose worker, node or result was lost: resubmitted.
LOST = (ray_errors.WorkerCrashedError, ray_errors.NodeDiedError, ray_errors.LocalRayletDiedError,
        ray_errors.ObjectLostError, ray_errors.OutOfMemoryError,
        ray_errors.ObjectFetchTimedOutError, ray_errors.RaySystemError)


class WorkerLost(RuntimeError):
    """A job lost its worker more often than ``execution.max_retries`` allows."""

    def __init__(self, what: str, attempts: int, last: str, out_of_memory: bool) -> None:
        super().__init__(f"{what}: its worker was lost {attempts} times; last: {last}")
        self.attempts = attempts
        self.last = last  # the last loss: Ray's error type and message
        self.out_of_memory = out_of_memory  # Ray's OOM killer ended the last attempt


@dataclass(frozen=True)
class LostAttempt:
    what: str  # e.g. "candidate 12"
    attempt: int
    error: str


@dataclass
class RayCluster:
    settings: ExecutionConfig
    lost: list[LostAttempt] = field(default_factory=list)  # every resubmission, in order
    _owned: bool = False
    _connected: bool = False

    def connect(self) -> None:
        """Joins the configured cluster, or starts a local one (stopped by ``close``). A Ray
        already initialised in this process (a notebook, a test) is used as it is."""
        if self._connected:
            return
        self._connected = True
        if ray.is_initialized():
            return
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
        if self.settings.ray_address is None:
            options.update(address="local", num_cpus=self.settings.num_cpus,
                           include_dashboard=False)
        else:
            options["address"] = self.settings.ray_address
        ray.init(**options)
        self._owned = True

    def close(self) -> None:
        if self._owned and ray.is_initialized():
            ray.shutdown()
        self._owned = self._connected = False

    def job_slots(self) -> int:
        """How many jobs the cluster runs at once (its CPUs over the CPUs one job holds)."""
        cpus = float(ray.cluster_resources().get("CPU", 0.0))
        return max(1, int(cpus // self.settings.cpus_per_evaluation))

    def remote(self, function: Callable[..., Any], **options: Any) -> Any:
        return ray.remote(function).options(  # type: ignore[call-overload]
            num_cpus=self.settings.cpus_per_evaluation, max_retries=0, retry_exceptions=False,
            **options)

    async def call(self, remote: Any, *args: Any, what: str, force_cancel: bool = True) -> Any:
        """``remote.remote(*args)``'s value. A lost worker means a resubmission, up to
        ``execution.max_retries`` times; an exception the job raised is re-raised as itself;
        cancelling the caller cancels the job (``force_cancel`` kills its worker process)."""
        attempts = self.settings.max_retries + 1
        for attempt in range(1, attempts + 1):
            ref = remote.remote(*args)
            try:
                return await ref
            except asyncio.CancelledError:
                ray.cancel(ref, force=force_cancel)
                raise
            except ray_errors.RayTaskError as error:
                raise _cause(error) from None
            except LOST as error:
                text = " ".join(str(error).split())[:300]
                self.lost.append(LostAttempt(what, attempt, text))
                if attempt == attempts:
                    raise WorkerLost(what, attempts, f"{type(error).__name__}: {text}",
                                     isinstance(error, ray_errors.OutOfMemoryError)) from error
                log.warning("%s: worker lost (%s); resubmitting (attempt %d of %d)", what,
                            type(error).__name__, attempt + 1, attempts)
        raise AssertionError("unreachable")


def _cause(error: ray_errors.RayTaskError) -> BaseException:
    """The exception the job itself raised (e.g. TaskFilesChanged), not Ray's wrapper."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error
