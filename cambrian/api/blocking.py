"""Running a coroutine to its end from plain code or from inside a running event loop (a
notebook): the bridge every blocking API call uses."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def run_blocking(make: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine ``make()`` to its end and return its result. Without a running event
    loop this is ``asyncio.run``; inside one (Jupyter, an async application) the coroutine runs
    on a loop of its own in a worker thread while this thread waits, and an interrupt (Ctrl-C,
    the notebook's stop button) cancels it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(make))
    running: dict[str, Any] = {}
    ready = threading.Event()

    async def main() -> T:
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        ready.set()
        return await make()

    def work() -> None:
        try:
            running["value"] = asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            running["error"] = exc
        finally:
            ready.set()

    worker = threading.Thread(target=work, name="cambrian-run", daemon=True)
    worker.start()
    try:
        worker.join()
    except KeyboardInterrupt:
        ready.wait()
        if "loop" in running:
            try:
                running["loop"].call_soon_threadsafe(running["task"].cancel)
            except RuntimeError:  # the run ended meanwhile: its loop is closed
                pass
        worker.join()
        raise
    if "error" in running:
        raise running["error"]
    return running["value"]


async def _awaited(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


async def _awaited(make: Callable[[], Awaitable[T]]) -> T:
    return await make()
