"""Run one command contained, with wall-clock, memory, CPU and output limits.

Guarantees of `run_sandboxed`:
- the command runs under the shim `limits_exec.py` (see its docstring and `containment.py`):
  its own PID namespace (else a subreaper sweep), so when the call ends for any reason
  (exit, wall-clock timeout, cancellation of the awaiting task) no descendant survives,
  `setsid` ones included; a parent-death signal, so a killed Cambrian takes it along; it
  cannot signal Cambrian (other PID namespace; as root, another user too);
- rlimits: core 0, address space (`memory_limit_mb`), CPU (`cpu_time_limit_s`, else derived
  from `timeout_s`), file size and process count (`ContainmentPolicy`);
- with `scratch_dir` (the evaluation's own folder, under the run directory): writes anywhere
  else fail (every other mount read-only), HOME and TMPDIR point into it and, when Cambrian
  runs as root, the command runs as the unprivileged sandbox user, which owns it; what the
  command adds to it is bounded (`ContainmentPolicy.disk_limit_mb`): over it, the command is
  killed, `disk_exceeded` is set and the folder is emptied;
- its own network namespace (`ContainmentPolicy.isolate_network`, on by default): no network,
  not even Cambrian's loopback services, but the destinations of `network_allow`;
- the environment is an allow-list (`child_env.py`), never the inherited environment, and no
  variable holding a registered or passed secret value reaches the command;
- stdout/stderr are read incrementally and at most `max_output_bytes` of each is kept
  (head + tail around a marker line), the dropped byte counts returned.
A mechanism the machine lacks is skipped with one logged warning (`containment.note_report`).

Memory-exhaustion heuristic (RLIMIT_AS makes allocations fail rather than killing):
a process that failed (non-zero exit or signal, not our own timeout kill) counts
as out of memory when
  1. the tail of its stderr names an allocation failure (MemoryError, numpy's
     "Unable to allocate", std::bad_alloc, "Cannot allocate memory",
     "out of memory"), or
  2. it died by SIGSEGV / SIGABRT / SIGBUS while its sampled peak virtual size
     (VmPeak, the quantity RLIMIT_AS bounds) was >= 85% of the limit
     (typically C code dereferencing a failed malloc), or
  3. it died by a SIGKILL we did not send and that was not the RLIMIT_CPU hard
     limit; the kernel OOM killer is by far the most common sender, except when its
     peak resident size stayed under 10% of the limit (a process that killed itself or its
     group is a crash, not an out-of-memory).
Limits: only the command itself is sampled (every 0.1 s, so a final burst is
missed); rlimits are per process, so each descendant has its own budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from asyncio import SubprocessTransport
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cambrian.evaluate.child_env import (  # noqa: F401 - re-exported for callers
    CREDENTIAL_NAME_PATTERN,
    DEFAULT_CHILD_ENV,
    THREAD_CAP_ENV,
    build_child_env,
    toolchain_paths,
)
from cambrian.evaluate.containment import (
    DEFAULT_POLICY,
    LIMITS_EXEC_PATH,  # noqa: F401 - re-exported
    ContainmentPolicy,
    default_cpu_time_limit,
    note_report,
    prepare_scratch,
    read_report,
    shim_argv,
    shim_config,
)
from cambrian.evaluate.output_capture import CaptureProtocol, HeadTailBuffer  # noqa: F401

MEMORY_ERROR_MARKERS = (
    "memoryerror",
    "unable to allocate",
    "std::bad_alloc",
    "cannot allocate memory",
    "out of memory",
)
MEMORY_MARKER_SEARCH_CHARS = 8_000
NEAR_MEMORY_LIMIT_FRACTION = 0.85
SMALL_FOR_OOM_FRACTION = 0.10
CRASH_SIGNALS_NEAR_LIMIT = frozenset({signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS})
# After SIGTERM the shim kills everything and reports; SIGKILL to its group after this.
TERM_GRACE_S = 3.0
# Once the shim is gone the pipes close at once; these only bound the waits.
REAP_GRACE_S = 5.0
DRAIN_GRACE_S = 5.0


@dataclass(frozen=True)
class SandboxResult:
    returncode: int
    stdout: str
    stderr: str
    # Wall-clock limit hit (group killed by us) or CPU-time limit hit.
    timed_out: bool
    memory_exceeded: bool
    signal_name: str | None
    duration_s: float
    stdout_truncated_bytes: int
    stderr_truncated_bytes: int
    # Set together with timed_out when it was the RLIMIT_CPU limit, not the wall clock.
    cpu_time_exceeded: bool = False
    # The RLIMIT_CPU in force: the caller's, or the one derived from the wall timeout.
    cpu_time_limit_s: float | None = None
    # What the shim reported about containment ({} when it could not report).
    containment: Mapping[str, Any] | None = None
    # The command added more than its disk quota to the scratch folder: killed, and what the
    # folder held removed.
    disk_exceeded: bool = False
    disk_limit_mb: int | None = None
    disk_written_bytes: int | None = None  # the most it had added when the shim last looked


class WarmWorkerLost(RuntimeError):
    """The warm worker running an evaluation died (not the evaluation): run it again cold."""


class Launched(Protocol):
    """A started shim: a cold subprocess, or one a warm worker forked (`warm_worker.py`)."""

    lost: bool  # the warm worker died under it: its outcome is unknown

    @property
    def returncode(self) -> int | None: ...

    def terminate(self) -> None: ...

    def kill_group(self) -> None: ...

    def close(self) -> None: ...


class WarmLauncher(Protocol):
    async def launch(self, *, config: Mapping[str, Any], argv: Sequence[str], cwd: Path,
                     env: Mapping[str, str], protocol: CaptureProtocol,
                     report_fd: int) -> Launched | None: ...


class _ColdProcess:
    """The shim as a subprocess of this process."""

    lost = False

    def __init__(self, transport: SubprocessTransport) -> None:
        self.transport = transport
        self.pid = transport.get_pid()

    @property
    def returncode(self) -> int | None:
        return self.transport.get_returncode()

    def terminate(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGTERM)

    def kill_group(self) -> None:
        kill_process_group(self.pid)

    def close(self) -> None:
        self.transport.close()


@dataclass(frozen=True)
class _Verdict:
    timed_out: bool = False
    memory_exceeded: bool = False
    cpu_time_exceeded: bool = False
    disk_exceeded: bool = False


def clear_folder(folder: Path) -> None:
    """Removes everything in `folder` (links not followed), keeping the folder."""
    with os.scandir(folder) as entries:
        for entry in list(entries):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)


def kill_process_group(pgid: int) -> None:
    # The leader may already be reaped; its pid number stays reserved while any
    # group member is alive, so this only ever reaches our own group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _signal_name(returncode: int) -> str | None:
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _stderr_names_allocation_failure(stderr: str) -> bool:
    tail = stderr[-MEMORY_MARKER_SEARCH_CHARS:].lower()
    return any(marker in tail for marker in MEMORY_ERROR_MARKERS)


def _judge(
    returncode: int,
    stderr: str,
    killed_by_timeout: bool,
    outcome: Mapping[str, Any],
    memory_limit_mb: int | None,
    cpu_time_limit_s: float,
) -> _Verdict:
    """Applies the heuristic described in the module docstring."""
    if outcome.get("disk_limit_hit"):  # the shim killed it (SIGKILL: not the OOM killer)
        return _Verdict(disk_exceeded=True)
    if killed_by_timeout or outcome.get("wall_deadline_hit"):
        return _Verdict(timed_out=True)
    if outcome.get("resident_limit_hit"):
        return _Verdict(memory_exceeded=True)
    if returncode == 0:
        return _Verdict()
    if returncode == -signal.SIGXCPU:
        return _Verdict(timed_out=True, cpu_time_exceeded=True)
    if returncode == -signal.SIGKILL:
        # RLIMIT_CPU's hard limit also sends SIGKILL, one CPU-second after SIGXCPU.
        if (outcome.get("cpu_s") or 0.0) >= 0.9 * cpu_time_limit_s:
            return _Verdict(timed_out=True, cpu_time_exceeded=True)
        peak = outcome.get("peak_rss_bytes") or 0  # what the OOM killer ranks processes by
        if memory_limit_mb is not None and 0 < peak < SMALL_FOR_OOM_FRACTION * memory_limit_mb * 2**20:
            return _Verdict()  # too small to be the OOM killer's pick: it was killed (or killed itself)
        return _Verdict(memory_exceeded=True)
    if _stderr_names_allocation_failure(stderr):
        return _Verdict(memory_exceeded=True)
    if memory_limit_mb is not None and -returncode in CRASH_SIGNALS_NEAR_LIMIT:
        limit_bytes = memory_limit_mb * 1024 * 1024
        if (outcome.get("peak_vm_bytes") or 0) >= NEAR_MEMORY_LIMIT_FRACTION * limit_bytes:
            return _Verdict(memory_exceeded=True)
    return _Verdict()


async def _wait(future: asyncio.Future[None], timeout_s: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(future), timeout_s)


async def _finish(launched: Launched, protocol: CaptureProtocol) -> None:
    """Stop the shim (it kills everything it contains), then wait for its exit and EOF."""
    if not protocol.leader_exited.done() and launched.returncode is None:
        launched.terminate()
        await _wait(protocol.leader_exited, TERM_GRACE_S)
    launched.kill_group()
    await _wait(protocol.leader_exited, REAP_GRACE_S)
    await _wait(protocol.all_closed, DRAIN_GRACE_S)
    launched.close()


async def run_sandboxed(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout_s: float,
    memory_limit_mb: int | None,
    max_output_bytes: int = 64_000,
    cpu_time_limit_s: float | None = None,
    scratch_dir: Path | None = None,
    read_only_paths: Sequence[Path | str] = (),
    secret_values: Iterable[str] = (),
    containment: ContainmentPolicy | None = None,
    warm: WarmLauncher | None = None,
    hidden_paths: Sequence[Path | str] = (),
) -> SandboxResult:
    """Run `argv` contained and limited; `env` adds to (and overrides) the allow-listed variables.

    `warm`: a warm worker (`warm_worker.py`) that runs `argv` when it can (a Python script of
    its interpreter), with the same containment; otherwise, or without one, the shim starts
    cold. Raises WarmWorkerLost when the warm worker died during the evaluation.

    `scratch_dir`: the only folder the command may write (created if missing; `cwd` should
    be in it). `read_only_paths`: more paths the command must be able to read (the
    interpreter, the command and its absolute path arguments are always readable).
    `hidden_paths` (with a scratch folder): folders the command must not see at all, whoever
    it runs as (a judged task's folder and run folder: its held-out cases, the store); they
    look empty, but for the paths above, which stay readable where they are.
    Whatever happens -- exit, timeout, cancellation -- no process of the command outlives
    this call; on cancellation everything is killed before CancelledError propagates.
    """
    if not argv:
        raise ValueError("run_sandboxed needs a command to run; argv is empty")
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    policy = containment or DEFAULT_POLICY
    cpu_limit = (
        float(cpu_time_limit_s) if cpu_time_limit_s is not None
        else default_cpu_time_limit(timeout_s)
    )
    scratch = Path(scratch_dir).resolve() if scratch_dir is not None else None
    if scratch is not None:
        prepare_scratch(scratch)
    child_env = build_child_env(env, scratch_dir=scratch, secret_values=secret_values)
    # A toolchain on PATH installed where the sandbox user cannot go (~/.cargo/bin) is exposed
    # read-only, as the interpreter's folders are.
    readable = [*read_only_paths, *(toolchain_paths(child_env) if scratch is not None else ())]
    report_read, report_write = os.pipe()
    config = shim_config(
        argv=argv, cwd=Path(cwd).resolve(), scratch=scratch, env=child_env,
        timeout_s=timeout_s, memory_limit_mb=memory_limit_mb, cpu_time_limit_s=cpu_limit,
        read_only_paths=readable, policy=policy, report_fd=report_write,
        hidden_paths=[Path(path).resolve() for path in hidden_paths],
    )
    loop = asyncio.get_running_loop()
    protocol = CaptureProtocol(max_output_bytes)
    started = time.monotonic()
    try:
        launched: Launched | None = None
        if warm is not None:
            launched = await warm.launch(config=config, argv=argv, cwd=Path(cwd),
                                         env=child_env, protocol=protocol,
                                         report_fd=report_write)
        if launched is None:
            transport, _ = await loop.subprocess_exec(
                lambda: protocol,
                *shim_argv(config, argv),
                cwd=str(cwd),
                env=child_env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                pass_fds=(report_write,),
            )
            launched = _ColdProcess(transport)
    except BaseException:
        os.close(report_read)
        raise
    finally:
        os.close(report_write)
    killed_by_timeout = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(protocol.leader_exited), timeout_s)
        except asyncio.TimeoutError:
            killed_by_timeout = True
    finally:
        # Runs on cancellation too: everything dies before CancelledError propagates.
        try:
            await _finish(launched, protocol)
        finally:
            report = read_report(report_read)
    duration_s = time.monotonic() - started
    if launched.lost:
        raise WarmWorkerLost("the warm evaluation worker died during the evaluation")
    note_report(report, config)

    outcome = (report or {}).get("command") or {}
    reaped_code = launched.returncode
    returncode = outcome.get("returncode")
    if not isinstance(returncode, int):
        returncode = reaped_code if reaped_code is not None else -signal.SIGKILL
    stderr = protocol.stderr.text("stderr")
    verdict = _judge(returncode, stderr, killed_by_timeout, outcome, memory_limit_mb, cpu_limit)
    if verdict.disk_exceeded and scratch is not None:
        await asyncio.to_thread(clear_folder, scratch)
    return SandboxResult(
        returncode=returncode,
        stdout=protocol.stdout.text("stdout"),
        stderr=stderr,
        timed_out=verdict.timed_out,
        memory_exceeded=verdict.memory_exceeded,
        signal_name=_signal_name(returncode),
        duration_s=duration_s,
        stdout_truncated_bytes=protocol.stdout.dropped_bytes,
        stderr_truncated_bytes=protocol.stderr.dropped_bytes,
        cpu_time_exceeded=verdict.cpu_time_exceeded,
        cpu_time_limit_s=cpu_limit,
        containment=(report or {}).get("mechanisms") or {},
        disk_exceeded=verdict.disk_exceeded,
        disk_limit_mb=policy.disk_limit_mb if scratch is not None else None,
        disk_written_bytes=outcome.get("disk_peak_bytes"),
    )
