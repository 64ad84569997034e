"""The run's live event feed for a web UI in another process.

Every session of a run (``Evolution.run``, whoever calls it) starts a :class:`LivePublisher`: a
loopback TCP server fed by the run's event bus. Its address and a random token are written to ``RUN_DIR/live.json`` with mode 0600
(candidate programs run as another user and cannot read it). A client connects, sends the token
on one line, gets a hello line, then one JSON line per committed event (a line "TOKEN probe"
gets the hello only: whether the run is alive).

The bus callback only puts the event on each client's bounded queue; a client that does not keep
up loses events (it is told how many, so it can reload what it shows) and never slows the loop.
Standard library only: the run process must not need the UI's dependencies.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import secrets
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from cambrian.core.events import Event, kind_of

LIVE_FILENAME = "live.json"
CLIENT_QUEUE = 1000  # events held for one slow client before it starts losing them
PROBE_TIMEOUT_S = 0.5
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LiveAddress:
    host: str
    port: int
    token: str
    pid: int


def live_file(run_dir: Path) -> Path:
    return Path(run_dir) / LIVE_FILENAME


def read_address(run_dir: Path) -> LiveAddress | None:
    try:
        data = json.loads(live_file(run_dir).read_text())
        return LiveAddress(str(data["host"]), int(data["port"]), str(data["token"]),
                           int(data.get("pid", 0)))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def encode(event: Event, at: float | None = None) -> bytes:
    line = {"kind": kind_of(event), "payload": event.payload(), "at": at or time.time()}
    return (json.dumps(line, default=str) + "\n").encode()


def connect(address: LiveAddress, timeout: float = PROBE_TIMEOUT_S,
            probe_only: bool = False) -> tuple[socket.socket, dict[str, Any]]:
    """A connected, authenticated socket and the publisher's hello (raises OSError)."""
    sock = socket.create_connection((address.host, address.port), timeout=timeout)
    try:
        sock.sendall(address.token.encode() + (b" probe\n" if probe_only else b"\n"))
        hello = b""
        while not hello.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError("the publisher closed the connection")
            hello += chunk
        data = json.loads(hello)
        if data.get("kind") != "hello":
            raise ConnectionError("unexpected answer from the publisher")
        return sock, data
    except BaseException:
        sock.close()
        raise


def probe(run_dir: Path) -> bool:
    """Whether a live publisher answers for this run (its process is running)."""
    address = read_address(run_dir)
    if address is None:
        return False
    try:
        sock, _ = connect(address, probe_only=True)
    except (OSError, ValueError):
        return False
    sock.close()
    return True


class _Client:
    def __init__(self) -> None:
        self.events: queue.Queue[bytes | None] = queue.Queue(CLIENT_QUEUE)
        self.dropped = 0

    def offer(self, line: bytes | None) -> None:
        try:
            self.events.put_nowait(line)
        except queue.Full:
            self.dropped += 1


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


class LivePublisher:
    def __init__(self, run_dir: Path, host: str = "127.0.0.1") -> None:
        self.run_dir = Path(run_dir)
        self.token = secrets.token_urlsafe(24)
        self._clients: set[_Client] = set()
        self._lock = threading.Lock()
        self._server = _Server((host, 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="live-publisher",
                                        kwargs={"poll_interval": 0.2}, daemon=True)

    @property
    def address(self) -> LiveAddress:
        host, port = self._server.server_address[:2]
        return LiveAddress(str(host), int(port), self.token, os.getpid())

    def start(self) -> Self:
        self._thread.start()
        path = live_file(self.run_dir)
        address = self.address
        data = json.dumps({"host": address.host, "port": address.port, "token": self.token,
                           "pid": address.pid}).encode()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a stale file of a killed session (and its mode) is not reused
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return self

    def publish(self, event: Event) -> None:
        """The bus subscriber: never blocks, never raises (and costs nothing unwatched)."""
        with self._lock:
            clients = list(self._clients)
        if not clients:
            return
        line = encode(event)
        for client in clients:
            client.offer(line)

    def close(self) -> None:
        address = read_address(self.run_dir)
        if address is not None and address.token == self.token:
            with contextlib.suppress(OSError):
                live_file(self.run_dir).unlink()
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            client.offer(None)
        self._stop_serving()
        self._server.server_close()

    def _stop_serving(self) -> None:
        """Stop the server thread now, not at its next poll: ``shutdown()`` waits for the
        serving loop to look at its flag, so a connection wakes the loop up."""
        if not self._thread.is_alive():
            return
        stopper = threading.Thread(target=self._server.shutdown, name="live-publisher-stop")
        stopper.start()
        while stopper.is_alive():
            with contextlib.suppress(OSError):
                socket.create_connection(self._server.server_address[:2], timeout=0.1).close()
            stopper.join(0.01)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _handler(self) -> type[socketserver.StreamRequestHandler]:
        publisher = self

        class Handler(socketserver.StreamRequestHandler):
            timeout = 5.0  # for the token line only

            def handle(self) -> None:
                line = self.rfile.readline(256).strip().decode(errors="replace")
                token, _, mode = line.partition(" ")
                if not secrets.compare_digest(token, publisher.token):
                    return
                if mode == "probe":
                    self._send({"kind": "hello", "pid": os.getpid(), "at": time.time()})
                    return
                self.connection.settimeout(None)
                client = _Client()
                with publisher._lock:
                    publisher._clients.add(client)
                try:
                    self._send({"kind": "hello", "pid": os.getpid(), "at": time.time()})
                    self._pump(client)
                except OSError:
                    pass
                finally:
                    with publisher._lock:
                        publisher._clients.discard(client)

            def _pump(self, client: _Client) -> None:
                while True:
                    try:
                        line = client.events.get(timeout=15.0)
                    except queue.Empty:
                        self._send({"kind": "ping", "at": time.time()})
                        continue
                    if line is None:
                        self._send({"kind": "closing", "at": time.time()})
                        return
                    if client.dropped:
                        dropped, client.dropped = client.dropped, 0
                        self._send({"kind": "overflow", "dropped": dropped, "at": time.time()})
                    self.wfile.write(line)

            def _send(self, data: dict[str, Any]) -> None:
                self.wfile.write((json.dumps(data) + "\n").encode())

        return Handler


def start_publisher(run_dir: Path,
                    subscribe: Callable[[Callable[[Event], None]], Any]) -> LivePublisher | None:
    """Start the feed of a run's events, given the run's ``subscribe`` (None, with a warning,
    if it cannot start: the run goes on without a live view)."""
    try:
        publisher = LivePublisher(run_dir).start()
    except OSError as exc:
        log.warning("the live event feed for the web UI could not start: %s", exc)
        return None
    subscribe(publisher.publish)
    return publisher
