"""The per-evaluation disk quota, watched by the sandbox shim's supervisor (stdlib only).

Loaded by `limits_exec.py` by path, like `linux_ns.py`: no package imports.

What an evaluation may write is its scratch folder (every other mount is read-only; /dev/shm is
a small tmpfs of its own). Its disk use is the blocks of every file and folder in the scratch
folder, each inode counted once, plus the files the evaluation deleted but still holds open
(on the scratch folder's file system: they take disk space until closed, and no walk of the
folder finds them). The supervisor samples it while the command runs, every 0.1 s, less often
the longer a walk takes (five times its duration, but at least once a second), and kills the
command when it has added more than the limit to what the folder held when it started; it
samples once more when the command has ended, so a burst between two samples fails too.
RLIMIT_FSIZE (at most the limit) caps each single file, so the overshoot is what the
evaluation can write in one sampling interval.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable

MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 1.0
WALK_SHARE = 0.2  # below MAX_INTERVAL_S, this share of the supervisor's time goes into walks
BLOCK_BYTES = 512  # st_blocks counts 512-byte units


def _tree_bytes(root: str, device: int, seen: set[tuple[int, int]]) -> int:
    """Disk blocks of `root` and everything under it on `device` (links not followed)."""
    total = 0
    pending = [root]
    try:
        info = os.lstat(root)
    except OSError:
        return 0
    seen.add((info.st_dev, info.st_ino))
    total += info.st_blocks * BLOCK_BYTES
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # removed meanwhile
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_dev != device:
                continue
            key = (info.st_dev, info.st_ino)
            if key not in seen:
                seen.add(key)
                total += info.st_blocks * BLOCK_BYTES
            if stat.S_ISDIR(info.st_mode):
                pending.append(entry.path)
    return total


def _open_deleted_bytes(pids: Iterable[int], device: int, seen: set[tuple[int, int]]) -> int:
    """Disk blocks of files on `device` that no folder holds any more but a process keeps open."""
    total = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                info = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if (info.st_dev == device and info.st_nlink == 0 and stat.S_ISREG(info.st_mode)
                    and key not in seen):
                seen.add(key)
                total += info.st_blocks * BLOCK_BYTES
    return total


def _proc_is_ours() -> bool:
    """Whether /proc shows this process's own PID namespace (its pids are ours)."""
    try:
        return os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


class DiskWatch:
    """`pids()`: the processes of the evaluation (their open deleted files count)."""

    def __init__(self, folder: str, limit_bytes: int,
                 pids: Callable[[], Iterable[int]]) -> None:
        self.folder = folder
        self.limit_bytes = limit_bytes
        self.pids = pids
        self.device = os.stat(folder).st_dev
        self.baseline = self.usage()
        self.peak_bytes = 0  # the most the evaluation had added, as sampled
        self.next_sample = 0.0

    def usage(self) -> int:
        seen: set[tuple[int, int]] = set()
        total = _tree_bytes(self.folder, self.device, seen)
        if _proc_is_ours():
            total += _open_deleted_bytes(self.pids(), self.device, seen)
        return total

    def over(self, now: bool = False) -> bool:
        """Samples when due (or `now`); whether the evaluation has written more than its
        limit."""
        began = time.monotonic()
        if began < self.next_sample and not now:
            return False
        added = self.usage() - self.baseline
        took = time.monotonic() - began
        self.peak_bytes = max(self.peak_bytes, added)
        self.next_sample = began + min(MAX_INTERVAL_S, max(MIN_INTERVAL_S, took / WALK_SHARE))
        return added > self.limit_bytes


def from_config(config: dict, pids: Callable[[], Iterable[int]]) -> DiskWatch | None:
    """The watch a shim configuration asks for (`disk_limit_bytes` on its `scratch` folder),
    or None."""
    limit, folder = config.get("disk_limit_bytes"), config.get("scratch")
    if limit is None or not folder:
        return None
    try:
        return DiskWatch(folder, int(limit), pids)
    except OSError:
        return None  # no scratch folder to watch: the command cannot write anywhere
