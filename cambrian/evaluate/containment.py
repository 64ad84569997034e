"""What the sandbox asks its shim (`limits_exec.py`) for, what it got, and this machine's report.

Asked for every sandboxed command: new PID, mount and network namespaces (the network one
unless `ContainmentPolicy.isolate_network` is off; the destinations of `network_allow` stay
reachable from it through the shim's forwarder, `net_relay.py`), a parent-death signal,
RLIMIT_CPU (derived from the wall timeout when the caller gives none, so a command orphaned by
a killed Cambrian still stops), RLIMIT_NPROC, RLIMIT_FSIZE and RLIMIT_CORE=0. With a scratch
folder, also: every mount read-only except the scratch folder, a disk quota on what the command adds to that folder
(`disk_limit_mb`, watched by the shim: `disk_watch.py`) and, when Cambrian runs as root, the
sandbox user SANDBOX_UID:SANDBOX_GID (a fixed uid no account uses; no user is created).

A mechanism the machine lacks is skipped, never fatal: the shim reports what it got, and
`note_report` logs one warning per missing mechanism per process. `containment_report()` runs
one probe command and says what is active here: `python -m cambrian.evaluate.containment` prints
it, and every run session records what it lacks (a `containment` event `cambrian status` shows).
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.evaluate.child_env import build_child_env, scratch_tmp_dir
from cambrian.evaluate.network import Destination

log = logging.getLogger(__name__)

LIMITS_EXEC_PATH = Path(__file__).with_name("limits_exec.py")
SANDBOX_UID = 1_907_000_000
SANDBOX_GID = 1_907_000_000
DEFAULT_MAX_PROCESSES = 512
DEFAULT_MAX_FILE_BYTES = 1 << 30
DEFAULT_DISK_LIMIT_MB = 2048
# The shim's own deadline backs up the caller's wall clock (e.g. if Cambrian is stopped).
WALL_GRACE_S = 10.0
PROBE_TIMEOUT_S = 60.0

# Missing mechanism -> what that leaves uncontained (logged once each).
CONSEQUENCES = {
    "parent_death_signal": "an evaluation may outlive a killed Cambrian",
    "pid_namespace": "a descendant that starts its own session can outlive a killed Cambrian, "
                     "and the candidate can signal Cambrian's processes",
    "mount_namespace": "the evaluation can write outside its scratch folder",
    "read_only_outside_scratch": "the evaluation can write outside its scratch folder",
    "sandbox_user": "the evaluation runs as root (without capabilities); RLIMIT_NPROC is not "
                    "enforced for root",
    "network_namespace": "the evaluation keeps network access",
}


@dataclass(frozen=True)
class ContainmentPolicy:
    # A network namespace of its own: only its own loopback, and the destinations of
    # `network_allow` (forwarded by the shim), are reachable.
    isolate_network: bool = True
    network_allow: tuple[Destination, ...] = ()
    # What a command may add to its scratch folder, in MB (None: no quota).
    disk_limit_mb: int | None = DEFAULT_DISK_LIMIT_MB
    # As root, run contained commands as SANDBOX_UID (needs a scratch folder).
    drop_privileges: bool = True
    max_processes: int | None = DEFAULT_MAX_PROCESSES
    max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES
    sandbox_uid: int = SANDBOX_UID
    sandbox_gid: int = SANDBOX_GID
    # An evaluation holding a GPU (devices.py) runs without the address-space limit (the
    # driver maps device memory into the process, tens of GB); its resident size is watched
    # against this limit instead, and going over it kills the command (out of memory).
    resident_limit_mb: int | None = None


DEFAULT_POLICY = ContainmentPolicy()
_warned: set[str] = set()
_report_cache: dict[str, bool | str] | None = None


def default_cpu_time_limit(timeout_s: float) -> float:
    """Every core busy for the whole wall timeout, plus a second: only orphans reach it."""
    return float(math.ceil(timeout_s * max(1, os.cpu_count() or 1)) + 1)


def _within(path: str, folder: str | None) -> bool:
    return folder is not None and (path == folder or path.startswith(folder.rstrip("/") + "/"))


def exposed_paths(
    argv: Sequence[str], env: Mapping[str, str], extra: Sequence[Path | str], scratch: Path | None
) -> list[str]:
    """Paths the sandbox user must be able to read: interpreter, command, its path arguments."""
    candidates: list[str] = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    candidates += [str(path) for path in extra]
    executable = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
    if executable:
        folder = os.path.dirname(os.path.abspath(executable))
        real_folder = os.path.dirname(os.path.realpath(executable))
        candidates += [folder, real_folder]
        if os.path.exists(os.path.join(os.path.dirname(folder), "pyvenv.cfg")):
            candidates.append(os.path.dirname(folder))  # a virtualenv's python
        if os.path.basename(real_folder) == "bin":
            candidates.append(os.path.dirname(real_folder))  # its prefix: lib/, share/
    candidates += [arg for arg in argv[1:] if arg.startswith("/")]
    candidates += [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    scratch_text = str(scratch) if scratch is not None else None
    exposed = set()
    for candidate in candidates:
        for form in _existing_forms(candidate, scratch_text):
            if not _within(form, scratch_text):
                exposed.add(form)
    return sorted(exposed)


# An absolute path outside the scratch folder -> its absolute and real forms, once both exist:
# the interpreter's folders, the task's and PYTHONPATH's come with every evaluation, and
# resolving them again each time was most of this function's cost. A form gone later is
# reported by the shim ("cannot expose"); a link pointed elsewhere later keeps its old target,
# which the command then cannot read (less exposed, never more).
_FORMS: dict[str, tuple[str, ...]] = {}


def _existing_forms(candidate: str, scratch: str | None) -> tuple[str, ...]:
    known = _FORMS.get(candidate)
    if known is not None:
        return known
    absolute, real = os.path.abspath(candidate), os.path.realpath(candidate)
    forms = tuple(form for form in dict.fromkeys((absolute, real)) if os.path.exists(form))
    if (os.path.isabs(candidate) and len(forms) == len({absolute, real})
            and not _within(absolute, scratch)):  # the scratch folder's paths are new each time
        if len(_FORMS) >= 4096:
            _FORMS.clear()
        _FORMS[candidate] = forms
    return forms


def shim_config(
    *,
    argv: Sequence[str],
    cwd: Path,
    scratch: Path | None,
    env: Mapping[str, str],
    timeout_s: float,
    memory_limit_mb: int | None,
    cpu_time_limit_s: float,
    read_only_paths: Sequence[Path | str],
    policy: ContainmentPolicy,
    report_fd: int | None,
    hidden_paths: Sequence[Path | str] = (),
) -> dict[str, Any]:
    drop = scratch is not None and policy.drop_privileges and os.geteuid() == 0
    # Folders covered by an empty tmpfs (with a scratch folder only: the view is sealed then);
    # what the command needs under them (`expose`) reappears there alone.
    hidden = [str(path) for path in hidden_paths] if scratch is not None else []
    disk_limit = (policy.disk_limit_mb * 2**20 if policy.disk_limit_mb is not None
                  and scratch is not None else None)
    return {
        "parent_pid": os.getpid(),
        "report_fd": report_fd,
        "memory_mb": None if memory_limit_mb is None else int(memory_limit_mb),
        "resident_mb": policy.resident_limit_mb,
        "cpu_s": float(cpu_time_limit_s),
        "max_processes": policy.max_processes,
        # No single file beyond the disk quota, even between two of the shim's samples.
        "max_file_bytes": (policy.max_file_bytes if disk_limit is None
                           else min(policy.max_file_bytes or disk_limit, disk_limit)),
        "disk_limit_bytes": disk_limit,
        "wall_deadline_s": timeout_s + WALL_GRACE_S,
        "pid_ns": True,
        "mount_ns": True,
        "net_ns": policy.isolate_network,
        "net_allow": ([d.shim_entry() for d in policy.network_allow]
                      if policy.isolate_network else []),
        "scratch": str(scratch) if scratch is not None else None,
        "cwd": str(cwd),
        "uid": policy.sandbox_uid if drop else None,
        "gid": policy.sandbox_gid if drop else None,
        "expose": (exposed_paths(argv, env, read_only_paths, scratch) if drop or hidden
                   else []),
        "hide": hidden,
    }


def shim_argv(config: Mapping[str, Any], argv: Sequence[str]) -> list[str]:
    return [sys.executable, "-I", "-S", str(LIMITS_EXEC_PATH), json.dumps(config), "--", *argv]


def prepare_scratch(scratch: Path) -> None:
    scratch.mkdir(parents=True, exist_ok=True)
    scratch_tmp_dir(scratch).mkdir(exist_ok=True)


def read_report(fd: int) -> dict[str, Any] | None:
    """The shim's JSON report from the read end of its pipe (closed here); None if it died."""
    chunks = []
    os.set_blocking(fd, False)
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        report = json.loads(b"".join(chunks))
    except ValueError:
        return None
    return report if isinstance(report, dict) else None


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning("sandbox containment: %s", message)


def note_report(report: Mapping[str, Any] | None, config: Mapping[str, Any]) -> None:
    """Logs, once per process, each mechanism this command asked for and did not get."""
    if report is None:
        return
    got = report.get("mechanisms") or {}
    wanted = ["parent_death_signal", "pid_namespace", "mount_namespace"]
    if config.get("scratch") and got.get("mount_namespace"):
        wanted.append("read_only_outside_scratch")
    if config.get("uid") is not None:
        wanted.append("sandbox_user")
    if config.get("net_ns"):
        wanted.append("network_namespace")
    for key in wanted:
        if not got.get(key):
            _warn_once(key, f"no {key.replace('_', ' ')}: {CONSEQUENCES[key]}")
    for text in report.get("warnings") or []:
        _warn_once(text, text)


def reclaim_ownership(path: Path) -> None:
    """Gives a folder the sandbox user wrote back to Cambrian's user (symlinks not followed)."""
    if os.geteuid() != 0 or not path.exists():
        return
    for folder, _, files in os.walk(path):
        for name in [".", *files]:
            os.chown(os.path.join(folder, name), os.geteuid(), os.getegid(),
                     follow_symlinks=False)


# What the probe command observes from inside (stdlib only, runs as the candidate would).
PROBE_CODE = r"""
import json, os, resource, sys
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
def writable(folder):
    path = os.path.join(folder, ".cambrian-probe-%d" % os.getpid())
    try:
        open(path, "w").close()
    except OSError:
        return False
    os.unlink(path)
    return True
limits = {name: resource.getrlimit(getattr(resource, "RLIMIT_" + name))[0]
          for name in ("CPU", "NPROC", "FSIZE", "CORE")}
print(json.dumps({
    "uid": os.getuid(), "ppid": os.getppid(),
    "no_new_privs": status.get("NoNewPrivs", "0").strip() == "1",
    "cap_eff": int(status.get("CapEff", "0").strip() or "0", 16),
    "scratch_writable": writable(os.getcwd()),
    "outside_writable": writable(sys.argv[1]),
    "limits": limits, "infinity": resource.RLIM_INFINITY,
    "secret_visible": "CAMBRIAN_PROBE_SECRET" in os.environ,
}))
"""


def _run_probe(policy: ContainmentPolicy) -> tuple[dict[str, Any] | None, dict[str, Any], str]:
    base = Path(tempfile.mkdtemp(prefix="cambrian-probe-"))
    try:
        scratch = base / "scratch"
        prepare_scratch(scratch)
        argv = [sys.executable, "-I", "-S", "-c", PROBE_CODE, str(base)]
        # An inherited variable off the allow-list must not reach the command.
        inherited = {**os.environ, "CAMBRIAN_PROBE_SECRET": "x"}
        env = build_child_env(None, scratch_dir=scratch, inherited=inherited)
        read_fd, write_fd = os.pipe()
        config = shim_config(
            argv=argv, cwd=scratch, scratch=scratch, env=env, timeout_s=PROBE_TIMEOUT_S,
            memory_limit_mb=None, cpu_time_limit_s=PROBE_TIMEOUT_S, read_only_paths=(),
            policy=policy, report_fd=write_fd,
        )
        try:
            completed = subprocess.run(
                shim_argv(config, argv), cwd=scratch, env=env,
                capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, pass_fds=(write_fd,),
                check=False,
            )
        finally:
            os.close(write_fd)
        report = read_report(read_fd)
        try:
            seen = json.loads(completed.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            seen = {}
        return report, seen, completed.stderr.strip()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def containment_report(*, refresh: bool = False) -> dict[str, bool | str]:
    """Which containment mechanisms are active on this machine, verified by one probe command."""
    global _report_cache
    if _report_cache is not None and not refresh:
        return dict(_report_cache)
    report, seen, stderr = _run_probe(ContainmentPolicy(isolate_network=True))
    got = (report or {}).get("mechanisms") or {}
    limits, infinity = seen.get("limits") or {}, seen.get("infinity")
    uid = seen.get("uid")
    unprivileged = uid not in (None, 0) or bool(got.get("user_namespace"))
    finite = {name: limits.get(name) not in (None, infinity) for name in ("CPU", "NPROC", "FSIZE")}
    result: dict[str, bool | str] = {
        "pid_namespace": bool(got.get("pid_namespace")),
        "mount_namespace": bool(got.get("mount_namespace")),
        "read_only_outside_scratch": bool(seen) and not seen.get("outside_writable", True),
        "scratch_writable": bool(seen.get("scratch_writable")),
        "network_namespace": bool(got.get("network_namespace")),
        "network_isolated_by_default": DEFAULT_POLICY.isolate_network,
        "sandbox_user": (f"uid {uid}" if uid not in (None, 0) else
                         "root in a user namespace" if got.get("user_namespace") else
                         "root without capabilities" if uid == 0 else "unknown"),
        "unprivileged": unprivileged,
        "no_capabilities": seen.get("cap_eff") == 0,
        "no_new_privileges": bool(seen.get("no_new_privs")),
        "parent_death_signal": bool(got.get("parent_death_signal")),
        "descendants_killed": ("pid namespace" if got.get("pid_namespace") else
                               "subreaper sweep" if got.get("subreaper") else False),
        "cambrian_unsignalable": bool(got.get("pid_namespace")),
        "rlimit_cpu": finite["CPU"],
        "rlimit_nproc": finite["NPROC"] and unprivileged,
        "rlimit_fsize": finite["FSIZE"],
        "rlimit_core": limits.get("CORE") == 0,
        "environment_allow_list": bool(seen) and not seen.get("secret_visible", True),
    }
    problems = [*(report or {}).get("warnings", [])] + ([stderr] if stderr else [])
    if report is None:
        problems.append("the sandbox shim sent no report")
    result["warnings"] = "; ".join(problems)
    _report_cache = result
    return dict(result)


# What an evaluation should have; a report without one of these is a degraded sandbox.
ESSENTIAL = ("pid_namespace", "mount_namespace", "read_only_outside_scratch", "unprivileged",
             "no_capabilities", "no_new_privileges", "parent_death_signal", "descendants_killed",
             "rlimit_cpu", "rlimit_nproc", "rlimit_fsize", "environment_allow_list")


def missing_mechanisms(report: Mapping[str, Any], isolate_network: bool = False) -> list[str]:
    """The essential mechanisms (and the network namespace, when asked for) a report lacks."""
    wanted = [*ESSENTIAL, *(["network_namespace"] if isolate_network else [])]
    return [name for name in wanted if not report.get(name)]


if __name__ == "__main__":  # python -m cambrian.evaluate.containment
    for name, value in containment_report().items():
        print(f"{name:28} {value}")
