"""Contain one command, supervise it, report how it ended (the sandbox's shim; stdlib only).

Usage: python -I -S limits_exec.py CONFIG_JSON -- COMMAND [ARGS...]

The sandbox starts this file instead of the command: it runs by path, once per evaluation, so
it imports nothing from the package (only its stdlib-only siblings `linux_ns.py` and
`process_tree.py`, by path) and must start fast. Each step degrades, and says so in the
report, when the machine does not offer it:

    cambrian
      └─ this shim: parent-death signal SIGTERM; new PID, mount (optionally network; as a
         │  non-root user, also user) namespaces; the mount view of `linux_ns.FilesystemView`;
         │  the scratch folder handed to the sandbox user
         └─ init: PID 1 of the new PID namespace (parent-death signal SIGKILL), mounts /proc,
            │  reaps, samples the command's peak virtual size, enforces a wall-clock deadline
            └─ the command: own session, rlimits (core 0, address space, CPU, file size,
               processes), sandbox user or no capabilities, no new privileges, parent-death
               signal SIGKILL, default SIGPIPE/SIGXFSZ, then exec

When init exits, the kernel kills every process left in its namespace, `setsid` ones included.
Without a PID namespace the shim itself supervises, as a child subreaper that kills every
descendant when the command ends, on SIGTERM, or when Cambrian dies.

CONFIG keys: parent_pid, report_fd, memory_mb, resident_mb, cpu_s, max_processes,
max_file_bytes, wall_deadline_s, pid_ns, mount_ns, net_ns, scratch, cwd, uid, gid, expose (see containment.py),
net_allow (destinations reachable from the network namespace: `net_relay.py`), disk_limit_bytes
(what the command may add to its scratch folder: `disk_watch.py`), hide (folders covered by
an empty tmpfs before `expose`: `linux_ns.FilesystemView.hide`).
The shim writes one JSON object to CONFIG["report_fd"]:
    {"mechanisms": {...}, "warnings": [...],
     "command": {"returncode", "cpu_s", "peak_vm_bytes", "peak_rss_bytes",
                 "wall_deadline_hit", "resident_limit_hit", "disk_limit_hit",
                 "disk_peak_bytes"}}
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import resource
import select
import signal
import sys
import time
import traceback

EXEC_FAILED_EXIT_CODE = 127
SHIM_FAILED_EXIT_CODE = 126
PARENT_GONE_EXIT_CODE = 125
USAGE = "usage: limits_exec.py CONFIG_JSON -- COMMAND [ARGS...]"
# What `ps`, `top` and `perf` call the sandbox's processes, each named first thing as it starts
# (a command that execs takes its program's name).
SHIM_NAME, INIT_NAME, COMMAND_NAME = "cambrian-shim", "cambrian-init", "cambrian-eval"
SAMPLE_INTERVAL_S = 0.1


def _sibling(name: str):  # type: ignore[no-untyped-def]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"cambrian_sandbox_{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


ns = _sibling("linux_ns")
tree = _sibling("process_tree")
disk_watch = _sibling("disk_watch")


def _clamped_to_hard_limit(which: int, wanted: int) -> int:
    # An unprivileged process cannot raise its hard limit; the existing (tighter) one wins.
    _, hard = resource.getrlimit(which)
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def _set_limit(which: int, value: int) -> None:
    limit = _clamped_to_hard_limit(which, value)
    resource.setrlimit(which, (limit, limit))


def apply_limits(memory_limit_mb: int | None, cpu_time_limit_s: float | None,
                 max_processes: int | None = None, max_file_bytes: int | None = None) -> None:
    # Crashing candidates must not litter the file system with core files.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_limit_mb is not None:
        _set_limit(resource.RLIMIT_AS, memory_limit_mb * 1024 * 1024)
    if cpu_time_limit_s is not None:
        soft = _clamped_to_hard_limit(resource.RLIMIT_CPU, max(1, math.ceil(cpu_time_limit_s)))
        hard = _clamped_to_hard_limit(resource.RLIMIT_CPU, soft + 1)
        # SIGXCPU at the soft limit; SIGKILL one CPU-second later if it is ignored.
        resource.setrlimit(resource.RLIMIT_CPU, (soft, max(soft, hard)))
    if max_file_bytes is not None:
        _set_limit(resource.RLIMIT_FSIZE, max_file_bytes)
    if max_processes is not None:
        _set_limit(resource.RLIMIT_NPROC, max_processes)


def name_process(name: str) -> None:
    with contextlib.suppress(OSError, AttributeError):  # a name is only a convenience
        ns.set_process_name(name)


def _best_effort(step, name: str, warn_fd: int) -> None:  # type: ignore[no-untyped-def]
    """A containment step of the command's own process; a kernel without it is reported to
    the supervisor (``warn_fd``) for the containment report, and the command goes on."""
    try:
        step()
    except (OSError, AttributeError) as error:
        with contextlib.suppress(OSError):
            os.write(warn_fd, f"{name} failed: {error}\n".encode())


class Shim:
    def __init__(self, config: dict, command: list[str],
                 runner=None) -> None:  # type: ignore[no-untyped-def]
        """``runner(command) -> exit code``: run the command in this (forked, contained)
        interpreter instead of exec'ing it -- the warm worker's last step (`fork_server.py`)."""
        self.config = config
        self.command = command
        self.runner = runner
        self.mechanisms: dict[str, object] = {}
        self.warnings: list[str] = []
        self.user: tuple[int, int] | None = None
        self.max_processes: int | None = None
        self.stop_requested = False
        self.init_pid: int | None = None
        self.command_pid: int | None = None
        # Before any user namespace makes this process its root.
        self.root = os.geteuid() == 0

    # ----------------------------------------------------------------- the command itself

    def become_command(self, parent: int, exec_write: int, warn_write: int) -> None:
        """In the forked child: contain, then exec (or run in place). Never returns."""
        name_process(COMMAND_NAME)  # first: what follows the fork is the command's cost
        config = self.config
        try:
            os.setsid()
            for number in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM):
                signal.signal(number, signal.SIG_DFL)  # ignored dispositions survive exec
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.chdir(config["cwd"])
            apply_limits(config.get("memory_mb"), config.get("cpu_s"),
                         self.max_processes, config.get("max_file_bytes"))
            if self.user is not None:
                os.setgroups([])
                os.setresgid(self.user[1], self.user[1], self.user[1])
                os.setresuid(self.user[0], self.user[0], self.user[0])
            elif os.getuid() == 0:
                _best_effort(ns.drop_root_capabilities, "dropping root's capabilities",
                             warn_write)
            _best_effort(ns.set_no_new_privileges, "no_new_privs", warn_write)
            _best_effort(lambda: ns.set_parent_death_signal(signal.SIGKILL),
                         "the command's parent-death signal", warn_write)
            os.close(warn_write)
            if os.getppid() != parent:
                os._exit(PARENT_GONE_EXIT_CODE)
        except BaseException as error:  # noqa: BLE001 - reported, then the child ends
            os.write(2, f"cambrian sandbox: cannot contain the command: {error}\n".encode())
            os._exit(SHIM_FAILED_EXIT_CODE)
        if self.runner is not None:
            # As exec would: no descriptor but stdin, stdout and stderr (not the report pipe,
            # which the command must not be able to forge), and the supervisor sees "exec".
            os.closerange(3, max(os.sysconf("SC_OPEN_MAX"), exec_write + 1))
            os._exit(self.runner(self.command))
        try:
            os.execvpe(self.command[0], self.command, os.environ)
        except BaseException as error:  # noqa: BLE001
            message = f"cambrian sandbox: cannot exec {self.command[0]!r}: {error}\n"
            os.write(2, message.encode())
        os._exit(EXEC_FAILED_EXIT_CODE)

    def supervise(self, *, sweep: bool) -> dict:
        """Fork and watch the command until it ends; kill everything it left if `sweep`."""
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
        me = os.getpid()
        # The scratch folder's size before the command starts (what `disk_limit_bytes` adds to).
        disk = disk_watch.from_config(self.config, lambda: tree.descendants(me))
        # Closes (close-on-exec) when the child execs: sampling starts with the command's own
        # address space, not the copy of this shim's that the child has before exec.
        exec_read, exec_write = os.pipe()
        warn_read, warn_write = os.pipe()  # containment steps the command's process missed
        child = os.fork()
        if child == 0:
            os.close(exec_read)
            os.close(warn_read)
            self.become_command(me, exec_write, warn_write)
        os.close(exec_write)
        os.close(warn_write)
        self.command_pid = child
        deadline_s = self.config.get("wall_deadline_s")
        deadline = None if deadline_s is None else time.monotonic() + deadline_s
        resident_limit = self.config.get("resident_mb")
        status, usage, peak, killed, deadline_hit, execed = None, None, 0, False, False, False
        resident_hit = disk_hit = False
        while status is None:
            if not execed and select.select([exec_read], [], [], 0)[0]:
                execed = True
            if execed:
                peak = max(peak, tree.peak_vm_bytes(child))
                resident_hit = resident_hit or (
                    resident_limit is not None
                    and tree.resident_bytes(child) > resident_limit * 1024 * 1024)
            signal.sigtimedwait([signal.SIGCHLD], SAMPLE_INTERVAL_S)
            for pid, pid_status, pid_usage in tree.reap_all():
                if pid == child:
                    status, usage = pid_status, pid_usage
            overdue = deadline is not None and time.monotonic() > deadline
            disk_hit = disk_hit or (status is None and not killed and disk is not None
                                    and disk.over())
            if status is None and not killed and (overdue or self.stop_requested or resident_hit
                                                  or disk_hit):
                deadline_hit, killed = overdue, True
                tree.kill_quietly(child)
                if sweep:
                    tree.kill_descendants(me)
        os.close(exec_read)
        if sweep:
            tree.kill_descendants(me)
        # A command that wrote too much between two samples and ended is over the limit too.
        disk_hit = disk_hit or (disk is not None and not killed and disk.over(now=True))
        with os.fdopen(warn_read, "rb") as warned:  # every writer is gone: read to EOF
            missed = warned.read(65536).decode(errors="replace").splitlines()
        return {
            "warnings": missed,
            "returncode": tree.returncode(status),
            "cpu_s": usage.ru_utime + usage.ru_stime,  # type: ignore[union-attr]
            "peak_vm_bytes": peak,
            "peak_rss_bytes": usage.ru_maxrss * 1024,  # type: ignore[union-attr]  # KiB on Linux
            "wall_deadline_hit": deadline_hit,
            "resident_limit_hit": resident_hit,
            "disk_limit_hit": disk_hit,
            "disk_peak_bytes": disk.peak_bytes if disk is not None else None,
        }

    # ----------------------------------------------------------------- containment steps

    def on_sigterm(self, *_: object) -> None:
        self.stop_requested = True
        if self.init_pid is not None:
            tree.kill_quietly(self.init_pid)  # the kernel then kills its whole namespace
        elif self.command_pid is not None:
            tree.kill_quietly(self.command_pid)

    def enter_namespaces(self) -> tuple[bool, bool, bool]:
        """Unshares the wanted namespaces, fewer when the kernel refuses; (pid, mount, net)."""
        config = self.config
        wanted = (bool(config.get("pid_ns")), bool(config.get("mount_ns")),
                  bool(config.get("net_ns")))
        attempts: list[tuple[bool, bool, bool]] = []
        for choice in [wanted, (wanted[0], wanted[1], False), (wanted[0], False, False),
                       (False, wanted[1], False)]:
            if choice not in attempts and any(choice):
                attempts.append(choice)
        root = self.root
        uid, gid = os.getuid(), os.getgid()
        failure: OSError | None = None
        for pid, mnt, net in attempts:
            flags = ((ns.CLONE_NEWPID if pid else 0) | (ns.CLONE_NEWNS if mnt else 0)
                     | (ns.CLONE_NEWNET if net else 0) | (0 if root else ns.CLONE_NEWUSER))
            try:
                ns.unshare(flags)
            except (OSError, AttributeError) as error:
                failure = error if isinstance(error, OSError) else OSError(str(error))
                continue
            if not root:
                try:
                    ns.map_user_to_root(uid, gid)
                    self.mechanisms["user_namespace"] = True
                except OSError as error:
                    self.warnings.append(f"user namespace without a mapping: {error}")
            if failure is not None:
                self.warnings.append(f"namespaces limited to pid={pid} mount={mnt} net={net}: "
                                     f"{failure}")
            return pid, mnt, net
        if attempts:
            self.warnings.append(f"no namespace available: {failure}")
        return False, False, False

    def choose_user(self, mount_ns: bool) -> None:
        """As root: the sandbox user (scratch folder handed over). Otherwise: NPROC's budget."""
        config = self.config
        budget = config.get("max_processes")
        if not self.root:
            if budget is not None:
                # RLIMIT_NPROC counts every process of the user (in its user namespace).
                in_user_ns = self.mechanisms.get("user_namespace")
                own = 0 if in_user_ns else tree.user_process_count(os.getuid())
                self.max_processes = budget + own
            return
        if config.get("uid") is None:
            return
        user = (int(config["uid"]), int(config["gid"]))
        if not mount_ns:
            for path in [config["cwd"], *config.get("expose", [])]:
                if ns.first_unreachable(path, user):
                    self.warnings.append(
                        f"the sandbox user cannot reach {path} without a mount namespace; the "
                        "command keeps uid 0 without capabilities")
                    return
        self.user, self.max_processes = user, budget
        if config.get("scratch"):
            for folder, _, files in os.walk(config["scratch"]):
                for name in [".", *files]:
                    os.chown(os.path.join(folder, name), *user, follow_symlinks=False)

    def build_filesystem(self) -> None:
        config = self.config
        scratch = config.get("scratch")
        wanted = {*config.get("expose", []), *([scratch] if scratch else [])}
        opened = {}
        for path in sorted(wanted, key=lambda path: path.count("/")):
            try:
                opened[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError as error:
                self.warnings.append(f"cannot expose {path}: {error.strerror}")
        view = ns.FilesystemView(self.user)
        hidden = 0
        for path in sorted(config.get("hide", []), key=lambda path: path.count("/")):
            if os.path.isdir(path):  # else gone, or inside a folder hidden already
                try:
                    view.hide(path)
                    hidden += 1
                except OSError as error:
                    self.warnings.append(f"cannot hide {path}: {error}")
        self.mechanisms["hidden_paths"] = hidden
        for path, fd in opened.items():
            try:
                view.expose(path, fd, writable=path == scratch)
            except OSError as error:
                if path == scratch:
                    raise  # sealing now would leave the command nowhere to write
                self.warnings.append(f"cannot expose {path}: {error}")
            finally:
                os.close(fd)
        if scratch is None:
            return
        try:
            view.fresh_shm()
        except OSError as error:
            self.warnings.append(f"no private /dev/shm: {error}")
        failures = view.seal()
        self.mechanisms["read_only_outside_scratch"] = True
        self.mechanisms["hidden_folders"] = len(view.skeletons)
        self.warnings.extend(f"not read-only: {failure}" for failure in failures)

    def start_relay(self):  # type: ignore[no-untyped-def]
        """The forwarder of `net_allow`'s destinations (`net_relay.py`), or None."""
        if not (self.config.get("net_ns") and self.config.get("net_allow")):
            return None
        relay = _sibling("net_relay").Relay(self.config["net_allow"])
        try:
            relay.start(lambda: ns.set_parent_death_signal(signal.SIGKILL))
        except OSError as error:
            self.warnings.append(f"no allowed destination reachable: {error}")
            return None
        return relay

    def allow_destinations(self, relay, net_ns: bool, mount_ns: bool) -> None:  # type: ignore[no-untyped-def]
        if not net_ns:  # no network namespace: the network is not cut off, nothing to forward
            relay.stop()
            return
        self.warnings.extend(relay.open_inside())
        if mount_ns and self.config.get("scratch"):
            self.warnings.extend(relay.cover_hosts(self.config["scratch"], ns.mount))
        self.mechanisms["network_allowed"] = len(relay.destinations)

    def run(self) -> int:
        config = self.config
        signal.signal(signal.SIGTERM, self.on_sigterm)
        try:
            ns.set_parent_death_signal(signal.SIGTERM)
            self.mechanisms["parent_death_signal"] = True
        except (OSError, AttributeError) as error:
            self.warnings.append(f"no parent-death signal: {error}")
        if os.getppid() != config.get("parent_pid", os.getppid()):
            return PARENT_GONE_EXIT_CODE
        relay = self.start_relay()  # forked before the network namespace: in Cambrian's
        pid_ns, mount_ns, net_ns = self.enter_namespaces()
        self.mechanisms.update(pid_namespace=pid_ns, mount_namespace=mount_ns)
        if config.get("net_ns"):
            self.mechanisms["network_namespace"] = net_ns
        if net_ns:
            try:
                ns.bring_loopback_up()
            except OSError as error:
                self.warnings.append(f"loopback stays down: {error}")
        self.choose_user(mount_ns)
        self.mechanisms["sandbox_user"] = self.user[0] if self.user else None
        self.mechanisms["max_processes"] = self.max_processes
        if mount_ns:
            try:
                self.build_filesystem()
            except OSError as error:
                self.warnings.append(f"file system view incomplete: {error}")
        if relay is not None:
            self.allow_destinations(relay, net_ns, mount_ns)
        if self.stop_requested:
            return SHIM_FAILED_EXIT_CODE
        if pid_ns:
            return self.run_in_pid_namespace(mount_ns)
        try:
            ns.set_child_subreaper()
            self.mechanisms["subreaper"] = True
        except (OSError, AttributeError) as error:
            self.warnings.append(f"no subreaper: {error}")
        return self.finish(self.supervise(sweep=True))

    def run_in_pid_namespace(self, mount_ns: bool) -> int:
        alive_read, alive_write = os.pipe()
        status_read, status_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(alive_write)
            os.close(status_read)
            self.init_main(alive_read, status_write, mount_ns)
        self.init_pid = pid
        os.close(alive_read)
        os.close(status_write)
        if self.stop_requested:
            tree.kill_quietly(pid)
        os.waitpid(pid, 0)
        chunks = []
        while chunk := os.read(status_read, 65536):
            chunks.append(chunk)
        try:
            message = json.loads(b"".join(chunks) or b"{}")
        except ValueError:
            message = {}
        if message.get("error"):
            self.warnings.append(f"namespace init: {message['error']}")
        outcome = message.get("command")
        if outcome is None:  # init killed (by a stop request) before it could tell
            outcome = {"returncode": -signal.SIGKILL, "cpu_s": None, "peak_vm_bytes": 0,
                       "wall_deadline_hit": False}
        return self.finish(outcome)

    def init_main(self, alive_read: int, status_write: int, mount_ns: bool) -> None:
        """PID 1 of the new namespace. Never returns; its exit ends the whole namespace."""
        name_process(INIT_NAME)
        message: dict = {}
        try:
            ns.set_parent_death_signal(signal.SIGKILL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if select.select([alive_read], [], [], 0)[0]:
                os._exit(PARENT_GONE_EXIT_CODE)  # the shim died before we could watch it
            if self.config.get("report_fd") is not None:
                os.close(self.config["report_fd"])
            if mount_ns:
                try:
                    ns.mount_proc()
                except OSError as error:
                    message["error"] = f"no writable private /proc: {error}"
            message["command"] = self.supervise(sweep=False)
        except BaseException:  # noqa: BLE001 - reported to the shim
            message["error"] = traceback.format_exc()
        os.write(status_write, json.dumps(message).encode())
        os._exit(0)

    def finish(self, outcome: dict) -> int:
        self.warnings.extend(outcome.pop("warnings", []))
        report_fd = self.config.get("report_fd")
        if report_fd is not None:
            report = {"mechanisms": self.mechanisms, "warnings": self.warnings,
                      "command": outcome}
            try:
                os.write(report_fd, json.dumps(report).encode())
            except OSError:
                pass
        code = outcome["returncode"]
        return code if code >= 0 else 128 - code


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(USAGE, file=sys.stderr)
        return 2
    name_process(SHIM_NAME)  # the warm worker's shim is named by fork_server.child_main
    config = json.loads(argv[0])
    if config.get("report_fd") is not None:
        os.set_inheritable(config["report_fd"], False)
    return Shim(config, argv[2:]).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
