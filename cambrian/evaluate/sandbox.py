"""Run one command in its own process group with wall-clock, memory, CPU and output limits.

Guarantees of `run_sandboxed`:
- the command runs in a new session (so a new process group); when the call ends
  for any reason (normal exit, wall-clock timeout, cancellation of the awaiting
  task) the WHOLE group gets SIGKILL, so grandchildren cannot outlive it;
- rlimits are set by `limits_exec.py` in the child right before exec (no preexec_fn);
- stdout/stderr are read incrementally and at most `max_output_bytes` of each is
  kept (head + tail around a marker line), so a program printing gigabytes
  cannot exhaust the parent's memory;
- the child inherits the environment minus credential-like variables (*_API_KEY,
  *_TOKEN, *SECRET*, ...): evaluated programs are untrusted LLM output. A caller
  that needs one (e.g. an LLM-judge evaluator) passes it explicitly in `env`.

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
     limit; the kernel OOM killer is by far the most common sender.
Limits: only the group leader is sampled (every 0.1 s, so a final burst is
missed); rlimits are per process, so each descendant has its own budget; a
descendant that calls setsid()/setpgid() leaves the group and escapes the kill.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
import time
from asyncio import SubprocessTransport
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

LIMITS_EXEC_PATH = Path(__file__).with_name("limits_exec.py")

# Numeric libraries otherwise start one thread per core in every evaluation.
THREAD_CAP_ENV: dict[str, str] = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
}
# Inherited variables with these name parts are withheld from the child.
CREDENTIAL_NAME_PATTERN = re.compile(
    r"(^|_)(API_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|ACCESS_KEY|PRIVATE_KEY)(_|$)",
    re.IGNORECASE,
)
# Python tracebacks on fatal signals make "crashed" results explain themselves.
DEFAULT_CHILD_ENV: dict[str, str] = {**THREAD_CAP_ENV, "PYTHONFAULTHANDLER": "1"}

MEMORY_ERROR_MARKERS = (
    "memoryerror",
    "unable to allocate",
    "std::bad_alloc",
    "cannot allocate memory",
    "out of memory",
)
MEMORY_MARKER_SEARCH_CHARS = 8_000
NEAR_MEMORY_LIMIT_FRACTION = 0.85
CRASH_SIGNALS_NEAR_LIMIT = frozenset({signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS})
SAMPLE_INTERVAL_S = 0.1
# After the group is killed the leader is reaped and the pipes close at once;
# these only bound the wait for a descendant that escaped the group.
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


class HeadTailBuffer:
    """Keeps the first and last bytes of a stream and counts what it dropped in between."""

    def __init__(self, max_bytes: int) -> None:
        self._head_cap = max(0, max_bytes) // 2
        self._tail_cap = max(0, max_bytes) - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped_bytes = 0

    def feed(self, chunk: bytes) -> None:
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail += chunk
        overflow = len(self._tail) - self._tail_cap
        if overflow > 0:
            del self._tail[:overflow]
            self.dropped_bytes += overflow

    def text(self, stream_name: str) -> str:
        if not self.dropped_bytes:
            return bytes(self._head + self._tail).decode("utf-8", errors="replace")
        marker = (
            f"\n[cambrian sandbox: {self.dropped_bytes} bytes of {stream_name} dropped; "
            f"kept the first {len(self._head)} and last {len(self._tail)} bytes]\n"
        )
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        return head + marker + tail


class _SandboxProtocol(asyncio.SubprocessProtocol):
    """Feeds the pipes into bounded buffers; tells leader exit apart from pipes closing.

    Pipes close only when every holder is gone, so a grandchild can keep them
    open after the leader exits: waiting for the leader must not wait for them.
    """

    def __init__(self, max_output_bytes: int) -> None:
        loop = asyncio.get_running_loop()
        self.stdout = HeadTailBuffer(max_output_bytes)
        self.stderr = HeadTailBuffer(max_output_bytes)
        self.leader_exited: asyncio.Future[None] = loop.create_future()
        self.all_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        chunk = data.encode() if isinstance(data, str) else data
        (self.stdout if fd == 1 else self.stderr).feed(chunk)

    def process_exited(self) -> None:
        if not self.leader_exited.done():
            self.leader_exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.all_closed.done():
            self.all_closed.set_result(None)


class _LeaderSampler:
    """Samples the group leader's peak virtual size and CPU time from /proc."""

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self._ticks_per_s = os.sysconf("SC_CLK_TCK")
        self.peak_vm_bytes = 0
        self.cpu_s = 0.0

    def sample(self) -> None:
        with contextlib.suppress(OSError, ValueError, IndexError):
            for line in Path(f"/proc/{self._pid}/status").read_text().splitlines():
                if line.startswith("VmPeak:"):
                    self.peak_vm_bytes = max(self.peak_vm_bytes, int(line.split()[1]) * 1024)
            # Fields after the parenthesised command name; utime/stime are 14 and 15.
            fields = Path(f"/proc/{self._pid}/stat").read_text().rsplit(")", 1)[1].split()
            self.cpu_s = max(self.cpu_s, (int(fields[11]) + int(fields[12])) / self._ticks_per_s)

    async def run_until(self, leader_exited: asyncio.Future[None]) -> None:
        while not leader_exited.done():
            self.sample()
            await asyncio.sleep(SAMPLE_INTERVAL_S)


@dataclass(frozen=True)
class _Verdict:
    timed_out: bool = False
    memory_exceeded: bool = False
    cpu_time_exceeded: bool = False


def build_child_env(overrides: Mapping[str, str] | None) -> dict[str, str]:
    """Inherited env minus credentials, then thread caps, then the caller's variables."""
    inherited = {
        name: value
        for name, value in os.environ.items()
        if not CREDENTIAL_NAME_PATTERN.search(name)
    }
    return {**inherited, **DEFAULT_CHILD_ENV, **(overrides or {})}


def build_limited_argv(
    argv: Sequence[str], memory_limit_mb: int | None, cpu_time_limit_s: float | None
) -> list[str]:
    memory = "none" if memory_limit_mb is None else str(int(memory_limit_mb))
    cpu = "none" if cpu_time_limit_s is None else repr(float(cpu_time_limit_s))
    return [sys.executable, "-I", "-S", str(LIMITS_EXEC_PATH), memory, cpu, "--", *argv]


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
    sampler: _LeaderSampler,
    memory_limit_mb: int | None,
    cpu_time_limit_s: float | None,
) -> _Verdict:
    """Applies the heuristic described in the module docstring."""
    if killed_by_timeout:
        return _Verdict(timed_out=True)
    if returncode == 0:
        return _Verdict()
    if returncode == -signal.SIGXCPU:
        return _Verdict(timed_out=True, cpu_time_exceeded=True)
    if returncode == -signal.SIGKILL:
        # RLIMIT_CPU's hard limit also sends SIGKILL, one CPU-second after SIGXCPU.
        if cpu_time_limit_s is not None and sampler.cpu_s >= 0.9 * cpu_time_limit_s:
            return _Verdict(timed_out=True, cpu_time_exceeded=True)
        return _Verdict(memory_exceeded=True)
    if _stderr_names_allocation_failure(stderr):
        return _Verdict(memory_exceeded=True)
    if memory_limit_mb is not None and -returncode in CRASH_SIGNALS_NEAR_LIMIT:
        limit_bytes = memory_limit_mb * 1024 * 1024
        if sampler.peak_vm_bytes >= NEAR_MEMORY_LIMIT_FRACTION * limit_bytes:
            return _Verdict(memory_exceeded=True)
    return _Verdict()


async def _finish(
    transport: SubprocessTransport, protocol: _SandboxProtocol, sampler_task: asyncio.Task[None]
) -> None:
    """Kill the group, then wait (bounded) for the leader's exit and the pipes' EOF."""
    kill_process_group(transport.get_pid())
    sampler_task.cancel()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(protocol.leader_exited), REAP_GRACE_S)
    with contextlib.suppress(asyncio.TimeoutError):
        # Only a descendant that escaped the group can hold the pipes open now.
        await asyncio.wait_for(asyncio.shield(protocol.all_closed), DRAIN_GRACE_S)
    transport.close()
    await asyncio.gather(sampler_task, return_exceptions=True)


async def run_sandboxed(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout_s: float,
    memory_limit_mb: int | None,
    max_output_bytes: int = 64_000,
    cpu_time_limit_s: float | None = None,
) -> SandboxResult:
    """Run `argv` under limits; `env` adds to (and overrides) the inherited environment.

    Whatever happens -- exit, timeout, cancellation -- no process of the group
    outlives this call; on cancellation the group is killed before
    CancelledError propagates.
    """
    if not argv:
        raise ValueError("run_sandboxed needs a command to run; argv is empty")
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    loop = asyncio.get_running_loop()
    protocol = _SandboxProtocol(max_output_bytes)
    started = time.monotonic()
    transport, _ = await loop.subprocess_exec(
        lambda: protocol,
        *build_limited_argv(argv, memory_limit_mb, cpu_time_limit_s),
        cwd=str(cwd),
        env=build_child_env(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    sampler = _LeaderSampler(transport.get_pid())
    sampler_task = asyncio.create_task(sampler.run_until(protocol.leader_exited))
    killed_by_timeout = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(protocol.leader_exited), timeout_s)
        except asyncio.TimeoutError:
            killed_by_timeout = True
    finally:
        # Runs on cancellation too: the group dies before CancelledError propagates.
        await _finish(transport, protocol, sampler_task)
    duration_s = time.monotonic() - started

    reaped_code = transport.get_returncode()
    returncode = reaped_code if reaped_code is not None else -signal.SIGKILL
    stderr = protocol.stderr.text("stderr")
    verdict = _judge(
        returncode, stderr, killed_by_timeout, sampler, memory_limit_mb, cpu_time_limit_s
    )
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
    )
