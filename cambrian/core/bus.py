"""The run's event bus: the recorder publishes each committed event, subscribers receive it.

Subscribers are plain callables run on the loop's thread; they must return quickly (a web UI
puts events on its own bounded queue). A subscriber that raises is logged and dropped, so a
broken display can never stop the search.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from cambrian.core.events import Event

Subscriber = Callable[[Event], None]
log = logging.getLogger(__name__)


class EventBus:
    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns the function that removes it again."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def publish(self, event: Event) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                log.exception("event subscriber %r failed; it is removed", subscriber)
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)
