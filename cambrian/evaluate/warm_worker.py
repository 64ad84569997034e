"""A warm interpreter for an evaluator's evaluations: no interpreter start-up, no re-import of
numpy and friends per evaluation, the same containment.

A cold evaluation starts two interpreters (the sandbox shim, then `python SCRIPT`), and the
script imports everything it needs again. A :class:`WarmWorker` starts one server
(`fork_server.py`) per evaluator, once, that has already imported what the evaluator's script
imports at its top level (standard library and installed packages only, never a module of the
task folder), and asks it to fork each evaluation: the forked child goes through every step of
the cold shim (`limits_exec.Shim`: namespaces, read-only mount view with only the scratch
folder writable, sandbox user, rlimits, no new privileges, init reaper, parent-death signals)
and then runs the script in place instead of exec'ing a fresh interpreter. The task files are
still copied and hash-checked into the scratch folder before every evaluation (`runner.py`),
and the evaluator and the candidate are loaded there, inside the contained child, each time.

`sandbox.run_sandboxed(..., warm=worker)` uses it for commands `PYTHON SCRIPT ARGS` run by the
worker's interpreter, and runs anything else cold. A worker that cannot start (or whose
preload imported a name the task folder also holds, or started threads, which forking does
not copy) is not used: evaluations run cold, with one logged warning. A server that dies is
restarted at the next evaluation (at most ``MAX_RESTARTS`` times); an evaluation it was
running raises `WarmWorkerLost`, and `runner.py` runs that evaluation again cold.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import itertools
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cambrian.core.python_ast import parse_python
from cambrian.evaluate.child_env import build_child_env
from cambrian.evaluate.output_capture import CaptureProtocol
from cambrian.evaluate.sandbox import WarmWorkerLost

log = logging.getLogger(__name__)

FORK_SERVER_PATH = Path(__file__).with_name("fork_server.py")
READY_TIMEOUT_S = 120.0  # the preload may import large packages
MAX_RESTARTS = 3
MAX_MESSAGE = 1 << 16


# ----------------------------------------------------------------------------- what to preload


def _top_level_imports(tree: ast.Module) -> list[str]:
    """Modules a script imports when it is loaded (not those inside functions or classes)."""
    names: list[str] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module != "__future__":
                names.append(node.module)
        elif isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
            for field in ("body", "orelse", "finalbody"):
                pending += getattr(node, field, [])
            for handler in getattr(node, "handlers", []):
                pending += handler.body
    return names


def preload_names(scripts: Iterable[Path], local_names: set[str]) -> list[str]:
    """What the fork server imports: the scripts' top-level imports, without any name the task
    folder holds (the task's own module must win, as in a fresh interpreter)."""
    found: list[str] = []
    for script in scripts:
        try:
            tree = parse_python(Path(script).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for name in _top_level_imports(tree):
            if name.split(".")[0] not in local_names and name not in found:
                found.append(name)
    return found


def local_module_names(relative_paths: Iterable[str], folder: str, *extra: str) -> set[str]:
    """Names importable from ``folder`` (a path relative to the task root, "" for the root):
    its modules, packages and other entries."""
    base = Path(folder)
    names = set(extra)
    for relative in relative_paths:
        path = Path(relative)
        try:
            inside = path.relative_to(base)
        except ValueError:
            continue
        first = inside.parts[0]
        names.add(first.split(".")[0] if len(inside.parts) == 1 else first)
    return names


# ----------------------------------------------------------------------------- one evaluation


class _PipeFeed(asyncio.Protocol):
    def __init__(self, process: WarmProcess, number: int) -> None:
        self.process = process
        self.number = number

    def data_received(self, data: bytes) -> None:
        self.process.protocol.pipe_data_received(self.number, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.process.pipe_closed()


class WarmProcess:
    """One evaluation's shim, forked by the server; what `sandbox._finish` drives."""

    def __init__(self, worker: WarmWorker, request_id: int, protocol: CaptureProtocol) -> None:
        self.worker = worker
        self.id = request_id
        self.protocol = protocol
        self.status: int | None = None
        self.lost = False
        self.open_pipes = 2
        self.transports: list[asyncio.BaseTransport] = []

    @property
    def returncode(self) -> int | None:
        if self.status is None:
            return None
        return os.waitstatus_to_exitcode(self.status)

    def exited(self, status: int | None, lost: bool = False) -> None:
        self.status = status
        self.lost = lost
        with contextlib.suppress(RuntimeError):  # a loop closed since (not ours any more)
            self.protocol.process_exited()
            if lost:  # the pipes may stay open in an orphan; stop waiting for them
                self.protocol.connection_lost(None)

    def pipe_closed(self) -> None:
        self.open_pipes -= 1
        if self.open_pipes == 0:
            self.protocol.connection_lost(None)

    def terminate(self) -> None:
        # A dead server's evaluations got its parent-death signal: nothing left to stop.
        with contextlib.suppress(OSError):
            self.worker.send({"op": "signal", "id": self.id, "signal": int(signal.SIGTERM)})

    def kill_group(self) -> None:
        with contextlib.suppress(OSError):
            self.worker.send({"op": "kill", "id": self.id})

    def close(self) -> None:
        self.worker.forget(self.id)
        for transport in self.transports:
            transport.close()


# ----------------------------------------------------------------------------- the worker


class WarmWorker:
    """One fork server for one evaluator (started at its first evaluation)."""

    def __init__(self, python: str, preload: Sequence[str], local_names: set[str],
                 env: Mapping[str, str] | None = None,
                 secret_values: Iterable[str] = (), own_scripts: Sequence[Path] = (),
                 own_modules: Mapping[str, Path] | None = None) -> None:
        """``own_scripts`` / ``own_modules``: Cambrian's own stdlib-only files every evaluation
        runs (module_runner.py; cascade_stages.py under the name module_runner looks up),
        compiled and loaded by the server once (`fork_server.load_own`)."""
        self.python = python
        self.own_scripts = [str(path) for path in own_scripts]
        self.own_modules = {name: str(path) for name, path in (own_modules or {}).items()}
        self.preload = list(preload)
        self.local_names = set(local_names)
        self.env = dict(env or {})
        self.secret_values = frozenset(secret_values)
        self.disabled: str | None = None  # why it is not used (evaluations then run cold)
        self.loaded: list[str] = []
        self.restarts = 0
        self.started = 0  # evaluations it forked
        self._process: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._folder: Path | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._ready: asyncio.Future[dict[str, Any]] | None = None
        self._pending: dict[int, WarmProcess] = {}
        self._ids = itertools.count(1)
        self._finalizer: weakref.finalize | None = None

    # ------------------------------------------------------------------ life

    def accepts(self, argv: Sequence[str]) -> bool:
        """Commands it runs: ``PYTHON SCRIPT ARGS`` with its own interpreter and a .py script."""
        return (self.disabled is None and len(argv) >= 2 and argv[0] == self.python
                and os.path.isabs(argv[1]) and argv[1].endswith(".py"))

    @property
    def alive(self) -> bool:
        return (self._process is not None and self._process.poll() is None
                and self._sock is not None)

    async def ensure(self) -> bool:
        """Start (or restart) the server if needed; False when evaluations should run cold."""
        if self.disabled is not None:
            return False
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.alive and self._ready is not None and self._ready.done():
                self._attach(loop)
                return True
            if self._process is not None:
                self._stop()
                self.restarts += 1
                if self.restarts > MAX_RESTARTS:
                    self._disable(f"its server died {self.restarts} times")
                    return False
            try:
                await self._start(loop)
            except (OSError, ValueError, TimeoutError, RuntimeError) as error:
                detail = self._server_stderr()
                self._stop()
                self._disable(f"the server did not start ({type(error).__name__}: {error})"
                              + (f": {detail}" if detail else ""))
                return False
            return self.disabled is None

    async def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="cambrian-warm-"))
        (self._folder / ".tmp").mkdir()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            env = build_child_env(self.env, scratch_dir=self._folder,
                                  secret_values=self.secret_values)
            config = {"socket_fd": theirs.fileno(), "parent_pid": os.getpid(),
                      "preload": self.preload, "local_names": sorted(self.local_names),
                      "own_scripts": self.own_scripts, "own_modules": self.own_modules}
            self._process = _spawn([self.python, str(FORK_SERVER_PATH), json.dumps(config)],
                                   self._folder, env, theirs.fileno())
        finally:
            theirs.close()
        ours.setblocking(False)
        self._sock = ours
        self._ready = loop.create_future()
        self._loop = None
        self._attach(loop)
        self._finalizer = weakref.finalize(self, _shut, ours, self._process, self._folder)
        ready = await asyncio.wait_for(asyncio.shield(self._ready), READY_TIMEOUT_S)
        self.loaded = list(ready.get("loaded", []))
        if ready.get("collisions"):
            self._disable("its preload imported modules the task folder also holds: "
                          + ", ".join(ready["collisions"]))
        elif int(ready.get("threads", 1)) > 1:
            self._disable(f"its preload started {ready['threads'] - 1} threads, which a fork "
                          "does not copy")
        if self.disabled is not None:
            self._stop()

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read the server's messages on ``loop`` (a Ray worker runs each job in a new one)."""
        if self._loop is loop or self._sock is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._sock.fileno())
        loop.add_reader(self._sock.fileno(), self._on_readable)
        self._loop = loop

    def _disable(self, why: str) -> None:
        if self.disabled is None:
            self.disabled = why
            log.warning("warm evaluation worker not used (%s); evaluations start a fresh "
                        "interpreter each", why)

    def _server_stderr(self) -> str:
        try:
            assert self._folder is not None
            return (self._folder / "server.log").read_text(errors="replace").strip()[-600:]
        except (OSError, AssertionError):
            return ""

    def _stop(self) -> None:
        for process in list(self._pending.values()):
            process.exited(None, lost=True)
        self._pending.clear()
        if self._loop is not None and self._sock is not None and not self._loop.is_closed():
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._sock.fileno())
        if self._finalizer is not None:
            self._finalizer()  # closes the socket (the server ends), reaps, removes the folder
        elif self._sock is not None:
            self._sock.close()
        self._sock, self._loop, self._finalizer = None, None, None

    async def close(self) -> None:
        """End the server (it kills any evaluation still running) and wait for it."""
        process = self._process
        self._stop()
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(process.wait, 5)
        self._process = None

    # ------------------------------------------------------------------ messages

    def send(self, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
        if self._sock is None:
            raise OSError("the warm worker is not running")
        data = json.dumps(message).encode()
        for _ in range(1000):
            try:
                if fds:
                    socket.send_fds(self._sock, [data], list(fds))
                else:
                    self._sock.send(data)
                return
            except BlockingIOError:
                import time

                time.sleep(0.001)
        raise OSError("the warm worker does not read its messages")

    def forget(self, request_id: int) -> None:
        self._pending.pop(request_id, None)

    def _on_readable(self) -> None:
        sock = self._sock
        if sock is None:
            return
        while True:
            try:
                data = sock.recv(MAX_MESSAGE)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:  # the server is gone
                if self._ready is not None and not self._ready.done():
                    self._ready.set_exception(RuntimeError("the server exited"))
                for process in list(self._pending.values()):
                    process.exited(None, lost=True)
                self._pending.clear()
                if self._loop is not None:
                    with contextlib.suppress(Exception):
                        self._loop.remove_reader(sock.fileno())
                self._sock = None
                sock.close()
                return
            message = json.loads(data)
            if message.get("ready"):
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(message)
                continue
            process = self._pending.get(int(message.get("id", -1)))
            if process is None:
                continue
            if "status" in message:
                process.exited(int(message["status"]))
            elif "error" in message:
                log.warning("warm evaluation worker: %s", message["error"])
                process.exited(None, lost=True)

    # ------------------------------------------------------------------ one evaluation

    async def launch(self, *, config: Mapping[str, Any], argv: Sequence[str], cwd: Path,
                     env: Mapping[str, str], protocol: CaptureProtocol,
                     report_fd: int) -> WarmProcess | None:
        """Fork the evaluation; None when it should run cold instead."""
        if not self.accepts(argv) or not await self.ensure():
            return None
        loop = asyncio.get_running_loop()
        request_id = next(self._ids)
        process = WarmProcess(self, request_id, protocol)
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            self._pending[request_id] = process
            self.send({"op": "run", "id": request_id, "config": dict(config), "argv": list(argv),
                       "env": dict(env), "cwd": str(cwd)}, (out_write, err_write, report_fd))
        except OSError:
            self._pending.pop(request_id, None)
            os.close(out_read)
            os.close(err_read)
            return None
        finally:
            os.close(out_write)
            os.close(err_write)
        self.started += 1
        for number, fd in ((1, out_read), (2, err_read)):
            transport, _ = await loop.connect_read_pipe(
                lambda number=number: _PipeFeed(process, number),  # type: ignore[misc]
                os.fdopen(fd, "rb", buffering=0))
            process.transports.append(transport)
        return process


def _spawn(argv: list[str], folder: Path, env: Mapping[str, str],
           socket_fd: int) -> subprocess.Popen[bytes]:
    """The server: its own session, output to a log in its folder (read if it fails)."""
    with open(folder / "server.log", "wb") as log_file:
        return subprocess.Popen(argv, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                                stdout=log_file, stderr=log_file, pass_fds=(socket_fd,),
                                start_new_session=True)


def _shut(sock: socket.socket, process: subprocess.Popen[bytes] | None,
          folder: Path | None) -> None:
    """Close the server's socket (it then kills its evaluations and exits), reap it."""
    sock.close()
    if process is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=2)
        if process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=2)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


__all__ = ["WarmProcess", "WarmWorker", "WarmWorkerLost", "local_module_names",
           "preload_names"]
