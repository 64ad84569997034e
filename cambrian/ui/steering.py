"""Steering a run from the UI: guidance and control requests, written exactly as ``cambrian
guide`` and ``request_control`` write them (stored, versioned, with a typed event), with the
source ``ui``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cambrian.core.bus import EventBus
from cambrian.core.events import Event
from cambrian.meta.guidance import GuidanceBoard
from cambrian.search.control import BUDGET_KEYS, request_control
from cambrian.store.recorder import Recorder
from cambrian.store.rows import GuidanceRow
from cambrian.store.store import Store

SOURCE = "ui"


class SteeringError(ValueError):
    """A request the run would refuse; the message says why."""


def _recorder(store: Store, on_event: Callable[[Event], None] | None) -> Recorder:
    bus = EventBus()
    if on_event is not None:
        bus.subscribe(on_event)
    return Recorder(store, bus)


def change_guidance(run_dir: Path, action: str, text: str = "", target: str = "",
                    on_event: Callable[[Event], None] | None = None) -> GuidanceRow:
    """Append, replace (edit), revert or clear the guidance of every prompt (``target=""``)
    or of a candidate or lineage (``candidate:ID``, ``lineage:ID``)."""
    store = Store.open(run_dir)
    try:
        board = GuidanceBoard(_recorder(store, on_event), run_dir)
        return board.change(action, text, source=SOURCE, target=target)
    except ValueError as exc:
        raise SteeringError(str(exc)) from None
    finally:
        store.close()


def budget_payload(values: dict[str, Any]) -> dict[str, Any]:
    """The budget request of a form: numbers for the keys given, the others left out."""
    payload: dict[str, Any] = {}
    for key, value in values.items():
        if key not in BUDGET_KEYS:
            raise SteeringError(f"a budget request changes one of {', '.join(BUDGET_KEYS)}; "
                                f"got {key!r}")
        if value is None or value == "":
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise SteeringError(f"{key} must be a number, got {value!r}") from None
        payload[key] = int(number) if key in ("generations", "max_tokens", "max_llm_calls") \
            else number
    if not payload:
        raise SteeringError("give at least one budget value")
    return payload


def request(run_dir: Path, action: str, payload: dict[str, Any] | None = None) -> int:
    """Queue pause, resume, stop or a budget change; the run applies it at its next turn."""
    store = Store.open(run_dir)
    try:
        return request_control(Recorder(store), action, payload, source=SOURCE)
    except ValueError as exc:
        raise SteeringError(str(exc)) from None
    finally:
        store.close()
