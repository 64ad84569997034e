"""Process-tree chores of the sandbox's shim: reap, sample, sweep (stdlib only, via /proc).

Loaded by `limits_exec.py` by path, like `linux_ns.py`: no package imports.
"""

from __future__ import annotations

import os
import signal
import time

SWEEP_ROUNDS = 100
SWEEP_PAUSE_S = 0.01


def returncode(status: int) -> int:
    """subprocess-style: the exit code, or minus the number of the signal that killed it."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def reap_all() -> list[tuple[int, int, object]]:
    """(pid, status, rusage) of every child that has ended, without waiting."""
    reaped = []
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append((pid, status, usage))


def kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _status_bytes(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def peak_vm_bytes(pid: int) -> int:
    """VmPeak of a running process (0 when gone): the size RLIMIT_AS bounds."""
    return _status_bytes(pid, "VmPeak:")


def resident_bytes(pid: int) -> int:
    """VmRSS of a running process (0 when gone): its memory actually in use."""
    return _status_bytes(pid, "VmRSS:")


def user_process_count(uid: int) -> int:
    """Threads of `uid`'s processes now: what RLIMIT_NPROC counts."""
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                pass
    return count


def _children_by_parent() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(name))
    return children


def descendants(root: int) -> list[int]:
    """Every process below `root` now (its children, theirs, ...)."""
    tree, pending, found = _children_by_parent(), [root], []
    while pending:
        for child in tree.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def kill_descendants(root: int) -> None:
    """SIGKILLs every descendant of `root` and reaps them.

    `root` should be a child subreaper, so that orphans (a `setsid` daemon whose parent
    exited) come back to it and are found on the next round.
    """
    for _ in range(SWEEP_ROUNDS):
        tree, pending, victims = _children_by_parent(), [root], []
        while pending:
            for child in tree.get(pending.pop(), []):
                victims.append(child)
                pending.append(child)
        if not victims:
            return
        for pid in victims:
            kill_quietly(pid)
        time.sleep(SWEEP_PAUSE_S)
        reap_all()
