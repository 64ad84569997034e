"""A local HTTP server that speaks to an OpenAI-compatible client the way ``answer`` says
(garbage, errors, slowness): for the tests and the hostile benchmark of bad model servers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class MisbehavingServer:
    def __init__(self, answer: Callable[[BaseHTTPRequestHandler, int], None]) -> None:
        """``answer(handler, call)`` answers the call-th POST."""
        self.calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                outer.calls += 1
                answer(self, outer.calls)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def model(self) -> dict[str, Any]:
        return {"provider": "openai", "model": "m", "base_url": self.base_url, "timeout_s": 3}
