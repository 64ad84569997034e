"""Linux containment primitives for the sandbox's supervising shim (stdlib only, via ctypes).

Loaded by `limits_exec.py`, which runs by path once per evaluation: no package imports, cheap
to import. Every function either works or raises OSError; the shim decides how to degrade.

`FilesystemView` builds the mount view of a contained evaluation inside a private mount
namespace: every mount read-only except the scratch folder (and a fresh /dev/shm), and, for a
sandbox user that cannot traverse some ancestor of a path it needs (the interpreter under
/root, a scratch folder under a 0700 temporary folder), that ancestor covered by a small
read-only tmpfs holding only bind mounts of the paths it needs, at their original locations.
A folder the caller hides (`hide`: a judged task's folder, its run folder) is covered the same
way for any user.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import socket
import stat
import struct

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
# Per-mount flags a read-only remount must repeat (locked ones otherwise make it fail).
MOUNT_OPTION_FLAGS = {
    "ro": MS_RDONLY,
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
}

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# SECBIT_NOROOT, SECBIT_NO_CAP_AMBIENT_RAISE and their locks: uid 0 gains no capability on exec.
SECUREBITS_NO_ROOT_CAPABILITIES = 0x1 | 0x2 | 0x40 | 0x80
MAX_CAPABILITY = 63

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ_FORMAT = "16sh22x"

# The parts of /proc that act on the whole machine, read-only in every contained /proc (the
# set container runtimes keep read-only); /proc/sys is writable by uid 0 even without
# capabilities.
PROC_MACHINE_WIDE = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")

SKELETON_OPTIONS = "mode=0755,size=1m,nr_inodes=4096"
SHM_OPTIONS = "mode=1777,size=64m,nr_inodes=4096"

_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)  # the interpreter's own libc symbols
        lib.unshare.argtypes = [ctypes.c_int]
        lib.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
        lib.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
        _libc = lib
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _encoded(text: str | None) -> bytes | None:
    return None if text is None else os.fsencode(text)


def unshare(flags: int) -> None:
    _check(libc().unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    lib = libc()
    _check(lib.mount(_encoded(source), _encoded(target), _encoded(fstype), flags, _encoded(data)),
           f"mount {target}")


def prctl(option: int, argument: int = 0) -> None:
    _check(libc().prctl(option, argument, 0, 0, 0), f"prctl({option})")


def set_process_name(name: str) -> None:
    """The name `ps`, `top` and `perf` show (at most 15 bytes; an exec replaces it)."""
    buffer = ctypes.create_string_buffer(name.encode()[:15])
    prctl(PR_SET_NAME, ctypes.addressof(buffer))


def set_parent_death_signal(signal_number: int) -> None:
    prctl(PR_SET_PDEATHSIG, signal_number)


def set_child_subreaper() -> None:
    prctl(PR_SET_CHILD_SUBREAPER, 1)


def set_no_new_privileges() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def drop_root_capabilities() -> None:
    """For a process that stays uid 0: after its next exec it holds no capability at all."""
    for capability in range(MAX_CAPABILITY + 1):
        try:
            prctl(PR_CAPBSET_DROP, capability)
        except OSError as error:
            if error.errno == 22:  # EINVAL: past the kernel's last capability
                break
            raise
    try:
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass  # kernels before 4.3 have no ambient set to clear
    prctl(PR_SET_SECUREBITS, SECUREBITS_NO_ROOT_CAPABILITIES)


def map_user_to_root(uid: int, gid: int) -> None:
    """In a fresh user namespace: this (unprivileged) user becomes its root."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def bring_loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(IFREQ_FORMAT, b"lo", 0)
        flags = struct.unpack(IFREQ_FORMAT, fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(IFREQ_FORMAT, b"lo", flags | IFF_UP))


def mount_proc() -> None:
    """A /proc of the current PID namespace (call from inside it) with its machine-wide parts
    read-only (`protect_proc`); if they cannot be protected, all of it read-only.

    The rest stays writable, as in a container runtime's /proc: a process names its own
    threads through /proc/self/task/TID/comm, and CUDA's driver fails to start (error 304)
    when that write is refused.
    """
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    mount("proc", "/proc", "proc", flags)
    try:
        protect_proc()
    except OSError:
        mount(None, "/proc", None, MS_REMOUNT | MS_RDONLY | flags)
        raise


def protect_proc() -> None:
    """Binds /proc's machine-wide parts (kernel settings, sysrq, IRQs, buses) read-only."""
    for path in PROC_MACHINE_WIDE:
        if not os.path.lexists(path):
            continue
        mount(path, path, None, MS_BIND | MS_REC)
        mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
              | MS_NOEXEC)


_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")  # compiled once, in the warm worker's server too


def _unescape(field: str) -> str:
    if "\\" not in field:
        return field
    return _OCTAL_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), field)


def read_mounts() -> list[tuple[str, int]]:
    """(mount point, per-mount flags) of every mount this process's namespace holds."""
    mounts = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            fields = line.split()
            flags = 0
            for option in fields[5].split(","):
                flags |= MOUNT_OPTION_FLAGS.get(option, 0)
            mounts.append((_unescape(fields[4]), flags))
    return mounts


def _is_within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def can_traverse(path: str, user: tuple[int, int]) -> bool:
    """Whether `user` (uid, gid; no supplementary groups) may search the directory `path`."""
    info = os.stat(path)
    if info.st_uid == user[0]:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid == user[1]:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def first_unreachable(path: str, user: tuple[int, int]) -> str | None:
    """The first directory on the way to `path` (itself included) `user` cannot search."""
    current = "/"
    for name in [part for part in path.split("/") if part]:
        current = os.path.join(current, name)
        if os.path.isdir(current) and not can_traverse(current, user):
            return current
    return None


class FilesystemView:
    """Builds a contained evaluation's mount view; call from inside a new mount namespace.

    `user` is the (uid, gid) the command will run as, when that differs from this process's:
    paths it needs are made reachable for it. `expose` every path before `seal`.
    """

    def __init__(self, user: tuple[int, int] | None) -> None:
        self.user = user
        self.skeletons: list[str] = []
        self._created: set[str] = set()  # directories we made inside our tmpfs skeletons
        self.writable: list[str] = []
        mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing propagates back to the host

    def can_traverse(self, path: str) -> bool:
        return self.user is None or can_traverse(path, self.user)

    def _skeleton(self, path: str) -> None:
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, SKELETON_OPTIONS)
        self.skeletons.append(path)
        self._created.add(path)

    def hide(self, path: str) -> None:
        """Covers the folder `path` with an empty tmpfs (read-only once sealed), whoever the
        user: call before `expose`, and what is exposed under it reappears there alone."""
        self._skeleton(path)

    def expose(self, target: str, source_fd: int, *, writable: bool) -> None:
        """Makes `target` (opened as `source_fd` before any mount) reachable at its own path."""
        is_dir = stat.S_ISDIR(os.fstat(source_fd).st_mode)
        parts = [part for part in target.split("/") if part]
        current, made_mount_point = "/", False
        for index, name in enumerate(parts):
            following = os.path.join(current, name)
            last = index == len(parts) - 1
            if current in self._created and not os.path.lexists(following):
                if last and not is_dir:
                    os.close(os.open(following, os.O_CREAT | os.O_WRONLY, 0o644))
                else:
                    os.mkdir(following, 0o755)
                    if not last:
                        self._created.add(following)
                made_mount_point = last
            if not last and not self.can_traverse(following):
                self._skeleton(following)
            current = following
        if made_mount_point or writable:
            mount(f"/proc/self/fd/{source_fd}", target, None, MS_BIND | MS_REC)
        if writable:
            self.writable.append(target)

    def fresh_shm(self) -> None:
        """A private /dev/shm (POSIX semaphores, multiprocessing) that vanishes afterwards."""
        if os.path.isdir("/dev/shm"):
            mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, SHM_OPTIONS)
            self.writable.append("/dev/shm")

    def seal(self) -> list[str]:
        """Remounts every mount read-only except the writable ones; returns the failures.

        Raises OSError when "/" itself cannot be made read-only.
        """
        # /proc keeps per-process entries writable (see `mount_proc`); its machine-wide parts
        # are protected instead.
        keep = [*self.writable, "/dev/pts", "/proc"]
        failures = []
        if os.path.isdir("/proc/self"):
            try:
                protect_proc()
            except OSError as error:
                keep.remove("/proc")
                failures.append(f"/proc's machine-wide parts: {error.strerror}")
        for mount_point, flags in read_mounts():
            if any(_is_within(mount_point, folder) for folder in keep) or flags & MS_RDONLY:
                continue
            try:
                mount(None, mount_point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
            except OSError as error:
                if mount_point == "/":
                    raise
                failures.append(f"{mount_point}: {error.strerror}")
        return failures
