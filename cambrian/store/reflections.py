"""A run's self-reflections (``reflection`` events, written by ``cambrian/meta/reflection.py``)
as the search, ``cambrian status``, the web UI and the report read them."""

from __future__ import annotations

from cambrian.core.events import Reflection
from cambrian.store.store import Store


def latest_reflection(store: Store) -> Reflection | None:
    """The run's newest reflection (None: none yet). ``intent_weights()`` turns its "favour" and
    "avoid" recommendations into weights per mutation intent."""
    return store.events.latest(Reflection)


def reflections(store: Store) -> list[tuple[float, Reflection]]:
    """Every reflection with its commit time, oldest first."""
    return [(stored.created_at, stored.event) for stored in store.events.list(Reflection)
            if isinstance(stored.event, Reflection)]
