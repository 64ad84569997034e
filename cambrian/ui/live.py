"""Fan-out of a run's live events to browsers (server-sent events).

One :class:`RunFeed` per watched run reads the run's live feed (``search/live_feed.py``) over its
loopback socket and offers each event to every browser's bounded queue. A browser that falls
behind has its queue replaced by one ``overflow`` message (the page then reloads what it
shows), so a slow browser costs only itself. Changes made by this UI process (guidance) are
offered the same way, since the run's process does not publish what another process wrote.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from cambrian.core.events import Event
from cambrian.search.live_feed import PROBE_TIMEOUT_S, encode, read_address

BROWSER_QUEUE = 200
HEARTBEAT_S = 15.0
log = logging.getLogger(__name__)


class BrowserQueue:
    def __init__(self, size: int = BROWSER_QUEUE) -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(size)

    def offer(self, message: dict[str, Any]) -> None:
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:  # coalesce: whatever was waiting becomes one reload
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait({"kind": "overflow"})


class RunFeed:
    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.browsers: set[BrowserQueue] = set()
        self.task: asyncio.Task[None] | None = None
        self.live = False

    def broadcast(self, message: dict[str, Any]) -> None:
        for browser in list(self.browsers):
            browser.offer(message)

    async def connect(self) -> bool:
        """Connect to the run's publisher; whether it answered."""
        address = read_address(self.run_dir)
        if address is None:
            return False
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(address.host, address.port), PROBE_TIMEOUT_S)
            writer.write(address.token.encode() + b"\n")
            hello = json.loads(await asyncio.wait_for(reader.readline(), PROBE_TIMEOUT_S) or b"{}")
        except (OSError, asyncio.TimeoutError, ValueError):
            return False
        if hello.get("kind") != "hello":
            writer.close()
            return False
        self.live = True
        self.task = asyncio.create_task(self._pump(reader, writer))
        return True

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if message.get("kind") != "ping":
                    self.broadcast(message)
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.live = False
            writer.close()
            self.broadcast({"kind": "feed_closed"})

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()


class LiveHub:
    def __init__(self) -> None:
        self._feeds: dict[str, RunFeed] = {}
        self._lock = asyncio.Lock()

    async def subscribe(self, key: str, run_dir: Path) -> tuple[BrowserQueue, bool]:
        """A queue of the run's events for one browser, and whether the run is live."""
        browser = BrowserQueue()
        async with self._lock:
            feed = self._feeds.get(key)
            if feed is None or not feed.live:
                feed = RunFeed(run_dir)
                if not await feed.connect():
                    return browser, False
                self._feeds[key] = feed
            feed.browsers.add(browser)
        return browser, True

    def unsubscribe(self, key: str, browser: BrowserQueue) -> None:
        feed = self._feeds.get(key)
        if feed is None:
            return
        feed.browsers.discard(browser)
        if not feed.browsers:  # nobody watches: stop reading the run
            feed.close()
            self._feeds.pop(key, None)

    def local(self, key: str, event: Event) -> None:
        """Offer an event written by this process (call on the event loop's thread)."""
        feed = self._feeds.get(key)
        if feed is not None:
            feed.broadcast(json.loads(encode(event)))

    async def close(self) -> None:
        for feed in list(self._feeds.values()):
            feed.close()
        self._feeds.clear()


async def stream(hub: LiveHub, key: str, run_dir: Path | None,
                 disconnected: Any) -> AsyncIterator[str]:
    """Server-sent events for one browser (``run_dir`` None: a run that is never live).
    ``disconnected``: an async callable telling whether the browser has gone."""
    yield "retry: 15000\n\n"
    if run_dir is None:
        yield _sse({"kind": "not_live"})
        return
    browser, live = await hub.subscribe(key, run_dir)
    if not live:
        yield _sse({"kind": "not_live"})
        return
    try:
        yield _sse({"kind": "hello"})
        while True:
            try:
                message = await asyncio.wait_for(browser.queue.get(), HEARTBEAT_S)
            except asyncio.TimeoutError:
                if await disconnected():
                    return
                yield ": ping\n\n"
                continue
            yield _sse(message)
            if message.get("kind") == "feed_closed":
                return
    finally:
        with contextlib.suppress(Exception):
            hub.unsubscribe(key, browser)


def _sse(message: dict[str, Any]) -> str:
    return f"data: {json.dumps(message, default=str)}\n\n"
