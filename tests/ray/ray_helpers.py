"""A real Ray cluster on this machine for the Ray tests: a head (no CPUs, so it runs no job) and
two worker nodes of one CPU each, every one a `ray start --block` process in its own session,
so that a test can SIGKILL one worker node's whole process group (raylet, agents, workers).

Started once per test session; a test that kills a worker asks for a fresh one afterwards
(`ensure_workers`). Torn down by killing the process groups started here and any process
whose command line names this cluster's own temporary folder -- never `ray stop`, which would
stop every Ray cluster on the machine.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray

RAY = str(Path(sys.executable).with_name("ray"))
START_TIMEOUT_S = 120.0
# Node deaths detected within about a second and a half (the defaults take ~30 s).
FAST_HEALTH_CHECKS = {"RAY_health_check_period_ms": "500", "RAY_health_check_timeout_ms": "500",
                      "RAY_health_check_failure_threshold": "3",
                      "RAY_health_check_initial_delay_ms": "500"}
# A throw-away cluster on the loopback interface: no token (Ray 2.5x enables token auth by
# default, and a token another Ray run generated in ~/.ray would have to match).
CLUSTER_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _alive_nodes(address: str) -> dict[str, float]:
    """Alive node id -> its CPUs, asked through a short-lived connection."""
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    try:
        return {n["NodeID"]: n["Resources"].get("CPU", 0.0) for n in ray.nodes() if n["Alive"]}
    finally:
        ray.shutdown()


@dataclass
class LocalRayCluster:
    temp_dir: Path
    address: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)  # node id -> process

    def _spawn(self, *args: str) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [RAY, "start", *args, "--block", "--disable-usage-stats"],
            env={**os.environ, **FAST_HEALTH_CHECKS, **CLUSTER_ENV}, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(process)
        return process

    def start_head(self) -> None:
        port = _free_port()
        self.address = f"127.0.0.1:{port}"
        self._spawn("--head", f"--port={port}", "--num-cpus=0", "--include-dashboard=false",
                    f"--temp-dir={self.temp_dir}")
        self._wait_for(lambda nodes: len(nodes) >= 1)

    def start_worker(self) -> str:
        """Starts one worker node (1 CPU) and returns its node id once it has joined."""
        before = set(self._wait_for(lambda nodes: True))
        process = self._spawn(f"--address={self.address}", "--num-cpus=1")
        nodes = self._wait_for(lambda nodes: bool(set(nodes) - before))
        node = next(iter(set(nodes) - before))
        self.workers[node] = process
        return node

    def _wait_for(self, ready) -> dict[str, float]:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                nodes = _alive_nodes(self.address)
                if ready(nodes):
                    return nodes
            except Exception:  # the head is still starting
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Ray cluster at {self.address} did not get ready")
            time.sleep(0.5)

    def kill_worker(self, node: str) -> None:
        """SIGKILL the worker node's whole process group: its raylet and everything it runs."""
        process = self.workers.pop(node)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def ensure_workers(self, count: int = 2) -> list[str]:
        """The alive worker nodes, starting new ones until there are ``count``."""
        alive = _alive_nodes(self.address)
        for node in [n for n in self.workers if n not in alive]:
            self.workers.pop(node)
        while len(self.workers) < count:
            self.start_worker()
        return list(self.workers)

    def stop(self) -> None:
        if ray.is_initialized():
            ray.shutdown()
        for process in self.processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
        _kill_processes_naming(str(self.temp_dir))
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def _kill_processes_naming(marker: str) -> None:
    """Worker processes run in their own sessions: any left that name this cluster's folder."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in command:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


def worker_label(node: str) -> str:
    """How the executor names a job's worker (``distributed/worker.py``)."""
    return f"{socket.gethostname()}/{node[:8]}"


def processes_naming(marker: str) -> list[str]:
    """The processes started from the folder ``marker``, as "PID COMMAND (in CWD)": those whose
    command line names it, and those whose working directory is inside it (an evaluation the
    warm worker forked keeps the fork server's command line; only its directory tells)."""
    inside = tuple(os.path.join(folder, "") for folder in {marker, os.path.realpath(marker)})
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        command, cwd = _command_line(entry), _working_dir(entry)
        if marker in command or f"{cwd}/".startswith(inside):
            found.append(f"{entry.name} {command} (in {cwd})")
    return found


@contextlib.contextmanager
def watching(marker: str, period_s: float = 0.2) -> Iterator[list[str]]:
    """Every process ``processes_naming(marker)`` found while the block ran, each once."""
    seen: list[str] = []
    done = threading.Event()

    def poll() -> None:
        while not done.wait(period_s):
            seen.extend(p for p in processes_naming(marker) if p not in seen)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join()


def children_naming(parent: int, marker: str) -> list[str]:
    """Command lines of ``parent``'s child processes that contain ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
        except OSError:  # not a process, or gone
            continue
        ppid = next((line.split()[1] for line in status.splitlines()
                     if line.startswith("PPid:")), "")
        command = _command_line(entry)
        if ppid == str(parent) and marker in command:
            found.append(command)
    return found


def _command_line(process: Path) -> str:
    try:
        return (process / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:  # gone
        return ""


def _working_dir(process: Path) -> str:
    try:
        return os.readlink(process / "cwd")
    except OSError:  # gone, or a zombie
        return ""


class Losing:
    """A remote function each of whose jobs loses its worker with ``error``."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.submitted = 0

    def remote(self, *args: Any) -> Any:
        self.submitted += 1

        async def lost() -> None:
            raise self.error

        return lost()
