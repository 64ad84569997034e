"""A scriptable local HTTP server that speaks the LLM providers' wire protocols.

Each test queues the replies the server should give (status, JSON body, headers, an optional
delay) and afterwards inspects what the real SDK client actually sent. The body builders below
produce the JSON shapes of the OpenAI Chat Completions, Anthropic Messages and Gemini
generateContent APIs, including their error envelopes.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


@dataclass(frozen=True)
class ScriptedReply:
    status: int = 200
    # A dict/list is sent as JSON; str/bytes are sent verbatim (for malformed-body tests).
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or the raw text when it was not JSON

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


class _QuietServer(ThreadingHTTPServer):
    # Do not wait for handler threads that are still sleeping in a "slow server" reply.
    block_on_close = False
    daemon_threads = True


class WireServer:
    """Serves queued replies in order; records every request it receives."""

    def __init__(self) -> None:
        self._replies: deque[ScriptedReply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[ReceivedRequest] = []
        self._server = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def enqueue(self, *replies: ScriptedReply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _next_reply(self, request: ReceivedRequest) -> ScriptedReply:
        with self._lock:
            self.requests.append(request)
            if self._replies:
                return self._replies.popleft()
        return ScriptedReply(
            status=599, body={"error": {"message": "wire server: no scripted reply left"}}
        )

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8") if length else ""
                try:
                    body: Any = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = raw
                request = ReceivedRequest(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = server._next_reply(request)
                if reply.delay_s and server._stopping.wait(reply.delay_s):
                    return
                self._send(reply)

            def _send(self, reply: ScriptedReply) -> None:
                if isinstance(reply.body, (dict, list)):
                    payload = json.dumps(reply.body).encode("utf-8")
                    content_type = "application/json"
                elif isinstance(reply.body, bytes):
                    payload, content_type = reply.body, "text/plain"
                else:
                    payload, content_type = str(reply.body or "").encode("utf-8"), "text/plain"
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test); nothing to deliver

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


class RecordingSleep:
    """Stands in for asyncio.sleep so retry tests can check requested delays without waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


def unused_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (for connection-refused tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- OpenAI Chat Completions -------------------------------------------------------------------


def openai_completion(
    text: str,
    *,
    finish_reason: str = "stop",
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    cached_tokens: int | None = None,
    model: str = "gpt-4.1-mini",
) -> ScriptedReply:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return ScriptedReply(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": usage,
        }
    )


def openai_error(
    status: int,
    message: str,
    *,
    type_: str = "invalid_request_error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> ScriptedReply:
    return ScriptedReply(
        status=status,
        body={"error": {"message": message, "type": type_, "param": None, "code": code}},
        headers=headers or {},
    )


# --- Anthropic Messages ------------------------------------------------------------------------


def anthropic_message(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read_input_tokens: int | None = None,
    model: str = "claude-sonnet-4-20250514",
) -> ScriptedReply:
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if cache_read_input_tokens is not None:
        usage["cache_read_input_tokens"] = cache_read_input_tokens
        usage["cache_creation_input_tokens"] = 0
    return ScriptedReply(
        body={
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
    )


def anthropic_text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def anthropic_error(
    status: int, error_type: str, message: str, *, headers: dict[str, str] | None = None
) -> ScriptedReply:
    return ScriptedReply(
        status=status,
        body={"type": "error", "error": {"type": error_type, "message": message}},
        headers=headers or {},
    )


# --- Gemini generateContent --------------------------------------------------------------------


def gemini_response(
    parts: list[dict[str, Any]],
    *,
    finish_reason: str = "STOP",
    prompt_tokens: int = 10,
    candidates_tokens: int = 5,
    cached_tokens: int | None = None,
    thoughts_tokens: int | None = None,
    model_version: str = "gemini-2.5-flash",
) -> ScriptedReply:
    usage: dict[str, Any] = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": candidates_tokens,
        "totalTokenCount": prompt_tokens + candidates_tokens + (thoughts_tokens or 0),
    }
    if cached_tokens is not None:
        usage["cachedContentTokenCount"] = cached_tokens
    if thoughts_tokens is not None:
        usage["thoughtsTokenCount"] = thoughts_tokens
    return ScriptedReply(
        body={
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": finish_reason,
                    "index": 0,
                }
            ],
            "usageMetadata": usage,
            "modelVersion": model_version,
            "responseId": "resp-test",
        }
    )


def gemini_error(
    code: int, status: str, message: str, *, headers: dict[str, str] | None = None
) -> ScriptedReply:
    return ScriptedReply(
        status=code,
        body={"error": {"code": code, "message": message, "status": status}},
        headers=headers or {},
    )
