"""A local stand-in for a contest server: answers each request from a script of replies."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = field(default_factory=lambda: {"score": 1.0})
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # sleep before answering (a hanging server)


@dataclass
class Received:
    at: float  # time.monotonic() on arrival
    payload: Any


class ScriptedServer:
    """Replies follow `script` in order, then `default` for every later request."""

    def __init__(self, script: list[Reply], default: Reply | None = None) -> None:
        self.script = list(script)
        self.default = default or Reply()
        self.received: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                payload = json.loads(self.rfile.read(length) or b"null")
                with server._lock:
                    server.received.append(Received(time.monotonic(), payload))
                    reply = server.script.pop(0) if server.script else server.default
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                encoded = body.encode()
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(encoded)))
                    self.end_headers()
                    self.wfile.write(encoded)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the hang scenario)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/score"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def closed_port_url() -> str:
    """A URL on which nothing listens: connections are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/score"
