"""Bounded capture of a sandboxed command's stdout and stderr."""

from __future__ import annotations

import asyncio


class HeadTailBuffer:
    """Keeps the first and last bytes of a stream and counts what it dropped in between."""

    def __init__(self, max_bytes: int) -> None:
        self._head_cap = max(0, max_bytes) // 2
        self._tail_cap = max(0, max_bytes) - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped_bytes = 0

    def feed(self, chunk: bytes) -> None:
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail += chunk
        overflow = len(self._tail) - self._tail_cap
        if overflow > 0:
            del self._tail[:overflow]
            self.dropped_bytes += overflow

    def text(self, stream_name: str) -> str:
        if not self.dropped_bytes:
            return bytes(self._head + self._tail).decode("utf-8", errors="replace")
        marker = (
            f"\n[cambrian sandbox: {self.dropped_bytes} bytes of {stream_name} dropped; "
            f"kept the first {len(self._head)} and last {len(self._tail)} bytes]\n"
        )
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        return head + marker + tail


class CaptureProtocol(asyncio.SubprocessProtocol):
    """Feeds the pipes into bounded buffers; tells leader exit apart from pipes closing.

    Pipes close only when every holder is gone, so a grandchild can keep them
    open after the leader exits: waiting for the leader must not wait for them.
    """

    def __init__(self, max_output_bytes: int) -> None:
        loop = asyncio.get_running_loop()
        self.stdout = HeadTailBuffer(max_output_bytes)
        self.stderr = HeadTailBuffer(max_output_bytes)
        self.leader_exited: asyncio.Future[None] = loop.create_future()
        self.all_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        chunk = data.encode() if isinstance(data, str) else data
        (self.stdout if fd == 1 else self.stderr).feed(chunk)

    def process_exited(self) -> None:
        if not self.leader_exited.done():
            self.leader_exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.all_closed.done():
            self.all_closed.set_result(None)
