"""A warm interpreter that forks one contained evaluation per request (stdlib only; run by path).

    python fork_server.py CONFIG_JSON      (CONFIG: socket_fd, parent_pid, preload, local_names,
                                            own_scripts, own_modules)

`warm_worker.py` starts one per evaluator, with the evaluation's allow-listed environment and
a parent-death signal. It imports what the evaluator imports at its top level -- standard
library and installed packages only: a name the task folder holds is never imported here,
and no task or candidate code ever runs in this process -- then serves requests on a Unix
socket. A request is a sandbox shim configuration (`containment.shim_config`) and a command
`PYTHON SCRIPT ARGS...`, with the evaluation's stdout, stderr and report pipes passed as file
descriptors. For each, it forks a child that becomes exactly what `limits_exec.py` is in a cold
evaluation: own session, PID/mount(/network) namespaces, the read-only mount view with only
the scratch folder writable, the sandbox user, rlimits, no new privileges, an init that reaps
and samples, parent-death signals all the way down. Only the last step differs: instead of
exec'ing a fresh interpreter that would import everything again, the contained command process
runs the script in the already-warm interpreter (`runpy`, as `python SCRIPT ARGS` would: its
folder first on sys.path, `__main__`, SystemExit codes, atexit handlers), with a fresh random
seed and no descriptor but stdin, stdout and stderr. Cambrian's own stdlib-only files that every
evaluation runs (`own_scripts`: module_runner.py; `own_modules`: cascade_stages.py, under the
name module_runner looks up) are compiled and loaded here once instead of in every child; the
child writes no bytecode (its scratch folder is new each time, so none would be read again).

Messages (JSON, one per SOCK_SEQPACKET datagram):
    server -> cambrian  {"ready": true, "loaded": [...], "failed": {...}, "collisions": [...],
                         "threads": N}                         once, after the preload
                        {"id": N, "pid": P}                    the evaluation's shim started
                        {"id": N, "status": S}                 it ended (raw wait status)
    cambrian -> server  {"op": "run", "id": N, "config": {...}, "argv": [...], "env": {...},
                         "cwd": "..."}  + 3 fds (stdout, stderr, report)
                        {"op": "signal", "id": N, "signal": SIG}   to its shim (SIGTERM: stop)
                        {"op": "kill", "id": N}                 SIGKILL its process group
End of file on the socket (Cambrian closed it or died) kills every evaluation and ends this
process; so does Cambrian's death (parent-death signal SIGKILL).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import importlib.util
import json
import os
import random
import resource
import runpy
import select
import signal
import socket
import sys
import traceback
import types

MAX_MESSAGE = 1 << 20
RUN_FAILED_EXIT_CODE = 126


def _sibling(name: str):  # type: ignore[no-untyped-def]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"cambrian_sandbox_{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


shim = _sibling("limits_exec")
SERVER_NAME = "cambrian-warm"  # what `ps`, `top` and `perf` call this process


# ----------------------------------------------------------------------------- preload


def preload(names: list[str]) -> tuple[list[str], dict[str, str]]:
    loaded, failed = [], {}
    for name in names:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception as error:  # noqa: BLE001 - the evaluation will meet it itself
            failed[name] = f"{type(error).__name__}: {error}"[:300]
        except SystemExit as error:
            failed[name] = f"SystemExit: {error}"[:300]
    return loaded, failed


def thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


# ----------------------------------------------------------------------------- the command


def _exit_code(code: object) -> int:
    """What the interpreter exits with for ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{code}\n")
    return 1


def _reseed() -> None:
    """Forked children share the server's random states; a fresh interpreter would not."""
    random.seed()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        with contextlib.suppress(Exception):
            numpy_random.seed()


def _finish_interpreter() -> None:
    """What the interpreter does on exit: wait for non-daemon threads, atexit, flush."""
    threading = sys.modules.get("threading")
    if threading is not None:
        with contextlib.suppress(Exception):
            threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


# script path -> ((mtime_ns, size) when compiled, code): Cambrian's own scripts, compiled once.
OWN_SCRIPTS: dict[str, tuple[tuple[int, int], types.CodeType]] = {}


def _stamp(path: str) -> tuple[int, int]:
    status = os.stat(path)
    return status.st_mtime_ns, status.st_size


def load_own(scripts: list[str], modules: dict[str, str]) -> None:
    """Compile Cambrian's own scripts and import its own modules (by path, under the given
    names) ahead of every evaluation; one that fails is left to the evaluation as before."""
    for script in scripts:
        with contextlib.suppress(OSError, SyntaxError, ValueError):
            stamp = _stamp(script)
            with open(script, "rb") as handle:
                OWN_SCRIPTS[script] = (stamp, compile(handle.read(), script, "exec"))
    for name, path in modules.items():
        with contextlib.suppress(Exception):
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            sys.modules[name] = module


def _run_main(script: str) -> None:
    """``runpy.run_path(script, run_name="__main__")``, from the compiled code when it is one of
    Cambrian's own scripts, unchanged since."""
    compiled = OWN_SCRIPTS.get(script)
    try:
        fresh = compiled is not None and _stamp(script) == compiled[0]
    except OSError:
        fresh = False
    if not fresh:
        runpy.run_path(script, run_name="__main__")
        return
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(__file__=script, __cached__=None, __loader__=None,
                                __package__="", __spec__=None)
    sys.modules["__main__"] = main_module
    exec(compiled[1], main_module.__dict__)  # type: ignore[index]  # noqa: S102


def run_script(command: list[str]) -> int:
    """``python SCRIPT ARGS`` in this interpreter (the contained command process)."""
    script = command[1]
    # A fresh interpreter ignores these two (the shim reset them for exec) and raises
    # KeyboardInterrupt on SIGINT.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    gc.enable()  # off in the shim and its init (`child_main`), on for the command as ever
    _reseed()
    sys.dont_write_bytecode = True
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # TMPDIR is the scratch folder's now
    sys.argv = list(command[1:])
    sys.path.insert(0, os.path.dirname(os.path.realpath(script)))
    code = 0
    try:
        _run_main(script)
    except SystemExit as exit_:
        code = _exit_code(exit_.code)
    except BaseException:  # noqa: BLE001 - reported like the interpreter does
        try:
            sys.excepthook(*sys.exc_info())
        except Exception:  # noqa: BLE001
            traceback.print_exc()
        code = 1
    _finish_interpreter()
    return code


def _high(fd: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD, 10)


def child_main(request: dict, fds: list[int]) -> None:
    """The forked child: becomes the evaluation's shim. Never returns."""
    shim.name_process(shim.SHIM_NAME)
    code = RUN_FAILED_EXIT_CODE
    # The shim and its init allocate little and live as long as the evaluation: no collector
    # passes over the server's objects (each would copy the pages it touches).
    gc.disable()
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        for number in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        out_fd, err_fd, report_fd = (_high(fd) for fd in fds)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.dup2(report_fd, 3, inheritable=False)
        os.closerange(4, os.sysconf("SC_OPEN_MAX"))
        config = dict(request["config"])
        config["report_fd"] = 3
        config["parent_pid"] = os.getppid()
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        argv = list(request["argv"])
        code = shim.Shim(config, argv, runner=run_script).run()
    except BaseException:  # noqa: BLE001
        with contextlib.suppress(OSError):
            os.write(2, f"cambrian warm worker: {traceback.format_exc()}".encode())
    finally:
        os._exit(code if code >= 0 else 128 - code)


# ----------------------------------------------------------------------------- the server


class Server:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.running: dict[int, int] = {}  # request id -> shim pid, until reaped

    def send(self, message: dict) -> None:
        with contextlib.suppress(OSError):  # Cambrian is gone: end of file ends the loop
            self.sock.send(json.dumps(message).encode())

    def start(self, request: dict, fds: list[int]) -> None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        try:
            pid = os.fork()
        except OSError as error:  # e.g. EAGAIN: Cambrian runs this one cold
            pid = -1
            self.send({"id": request["id"], "error": f"fork failed: {error}"})
        if pid == 0:
            child_main(request, fds)
        for fd in fds:
            os.close(fd)
        if pid < 0:
            return
        self.running[int(request["id"])] = pid
        self.send({"id": request["id"], "pid": pid})

    def reap(self) -> None:
        by_pid = {pid: rid for rid, pid in self.running.items()}
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            rid = by_pid.get(pid)
            if rid is None:
                continue
            del self.running[rid]
            with contextlib.suppress(OSError):  # as cold: what is left of its group dies
                os.killpg(pid, signal.SIGKILL)
            self.send({"id": rid, "status": status})

    def handle(self, request: dict, fds: list[int]) -> None:
        op = request.get("op")
        if op == "run" and len(fds) == 3:
            self.start(request, fds)
            return
        for fd in fds:
            os.close(fd)
        pid = self.running.get(int(request.get("id", -1)))
        if pid is None:
            return
        with contextlib.suppress(OSError):
            if op == "signal":
                os.kill(pid, int(request.get("signal", signal.SIGTERM)))
            elif op == "kill":
                os.killpg(pid, signal.SIGKILL)

    def serve(self) -> None:
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        try:
            while True:
                readable, _, _ = select.select([self.sock, wake_read], [], [])
                if wake_read in readable:
                    while True:
                        try:
                            if not os.read(wake_read, 4096):
                                break
                        except BlockingIOError:
                            break
                    self.reap()
                if self.sock in readable:
                    message, fds, _, _ = socket.recv_fds(self.sock, MAX_MESSAGE, 3)
                    if not message:
                        return
                    self.handle(json.loads(message), list(fds))
                    self.reap()
        finally:
            for pid in self.running.values():
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)


def main(argv: list[str]) -> int:
    config = json.loads(argv[0])
    with contextlib.suppress(OSError, AttributeError):
        shim.ns.set_parent_death_signal(signal.SIGKILL)
    shim.name_process(SERVER_NAME)
    if os.getppid() != config.get("parent_pid", os.getppid()):
        return shim.PARENT_GONE_EXIT_CODE
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sock = socket.socket(fileno=int(config["socket_fd"]))
    sock.set_inheritable(False)
    # Like module_runner: this file's folder must not shadow the task's modules.
    own = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path
                   if not entry or os.path.realpath(entry) != os.path.realpath(own)]
    loaded, failed = preload(list(config.get("preload", [])))
    load_own(list(config.get("own_scripts", [])), dict(config.get("own_modules", {})))
    gc.collect()
    gc.freeze()  # what is loaded now stays out of every child's collections (no copied pages)
    local = set(config.get("local_names", []))
    collisions = sorted(local & {name.split(".")[0] for name in sys.modules})
    server = Server(sock)
    server.send({"ready": True, "loaded": loaded, "failed": failed, "collisions": collisions,
                 "threads": thread_count()})
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
