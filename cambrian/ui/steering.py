"""Steering a run from the UI: guidance and control requests, written exactly as ``cambrian
guide`` and ``cambrian control`` write them (stored, versioned, with a typed event), with the
source ``ui``. The checks are theirs (``GuidanceBoard.change``, ``request_control``); this module
only reads the request's JSON body strictly (a string where text goes, an object of numbers for a
budget, a boolean ``confirm``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cambrian.core.bus import EventBus
from cambrian.core.events import Event
from cambrian.meta.guidance import GuidanceBoard
from cambrian.search.control import ControlAnswer, queue_control
from cambrian.search.control_checks import NeedsConfirmation
from cambrian.store.recorder import Recorder
from cambrian.store.rows import GuidanceRow
from cambrian.store.store import Store

SOURCE = "ui"


class SteeringError(ValueError):
    """A request the run would refuse; the message says why."""

    status = 400


class ConfirmationNeeded(SteeringError):
    """A budget that ends the run at once, sent without ``"confirm": true``."""

    status = 409


def _recorder(store: Store, on_event: Callable[[Event], None] | None) -> Recorder:
    bus = EventBus()
    if on_event is not None:
        bus.subscribe(on_event)
    return Recorder(store, bus)


def field(body: Any, name: str, kind: type, default: Any) -> Any:
    """``body[name]`` when it is a ``kind`` (absent or null: ``default``); else refused."""
    if not isinstance(body, dict):
        raise SteeringError("the request body must be a JSON object")
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise SteeringError(f"{name} must be a {_KIND_NAMES.get(kind, kind.__name__)}, "
                            f"got {value!r}")
    return value


_KIND_NAMES = {str: "string", dict: "JSON object", bool: "boolean (true or false)"}


def guidance_limit(run_dir: Path) -> int:
    store = Store.open(run_dir, read_only=True)
    try:
        return GuidanceBoard(Recorder(store), None).max_chars
    finally:
        store.close()


def change_guidance(run_dir: Path, body: Any,
                    on_event: Callable[[Event], None] | None = None) -> GuidanceRow:
    """Append, replace (edit), revert or clear the guidance of every prompt (``target=""``)
    or of a candidate or lineage (``candidate:ID``, ``lineage:ID``)."""
    action = field(body, "action", str, "")
    text = field(body, "text", str, "")
    target = field(body, "target", str, "")
    store = Store.open(run_dir)
    try:
        board = GuidanceBoard(_recorder(store, on_event), run_dir)
        return board.change(action, text, source=SOURCE, target=target)
    except ValueError as exc:
        raise SteeringError(str(exc)) from None
    finally:
        store.close()


def request(run_dir: Path, body: Any) -> ControlAnswer:
    """Queue pause, resume, stop or a budget change (``{"action": "budget", "budget":
    {"generations": 40}, "confirm": false}``); the run applies it at its next turn."""
    action = field(body, "action", str, "")
    budget = field(body, "budget", dict, {})
    confirm = field(body, "confirm", bool, False)
    store = Store.open(run_dir)
    try:
        return queue_control(Recorder(store), action, budget, source=SOURCE, confirm=confirm)
    except NeedsConfirmation as exc:
        raise ConfirmationNeeded(str(exc)) from None
    except ValueError as exc:
        raise SteeringError(str(exc)) from None
    finally:
        store.close()
