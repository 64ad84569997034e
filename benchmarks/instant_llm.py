"""An OpenAI-compatible chat server on 127.0.0.1 that answers at once (benchmarks only).

``InstantServer(reply)`` serves ``POST .../chat/completions`` with ``reply(messages, index)``
(a function of the request's messages and its index) and records when each request arrived;
``delay_s`` stands for a slower model. Any client that speaks the OpenAI chat API (Cambrian's
``openai`` provider, OpenEvolve, ShinkaEvolve) can use it as its model.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[list[dict[str, Any]], int], str]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client stopped mid-request (a benchmark ends its run after what it timed)


class InstantServer:
    def __init__(self, reply: Reply, delay_s: float = 0.0) -> None:
        self.reply = reply
        self.delay_s = delay_s
        self.arrivals: list[float] = []  # time.time() of each request
        self.requests: list[list[dict[str, Any]]] = []  # the messages of each request
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> InstantServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # e.g. GET /v1/models
                self._send({"object": "list", "data": [{"id": "instant", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:
                    index = len(outer.arrivals)
                    outer.arrivals.append(time.time())
                    outer.requests.append(body.get("messages", []))
                if outer.delay_s:
                    time.sleep(outer.delay_s)
                messages = body.get("messages", [])
                text = outer.reply(messages, index)
                for stop in body.get("stop") or []:
                    text = text.split(stop, 1)[0]
                self._send({
                    "id": f"chatcmpl-{index}", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model", "instant"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": sum(len(str(m.get("content", ""))) // 4
                                                   for m in messages),
                              "completion_tokens": len(text) // 4,
                              "total_tokens": 0},
                })

            def _send(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
