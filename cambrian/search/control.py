"""Steering a running search from outside the loop: pause and resume proposals, change the
generation or money budget, stop cleanly (the web UI, ``cambrian control``, the Python API).

Every request is a row of ``control_requests`` first, written by whichever process asks (the web
UI may run in another process); the loop takes pending rows in order at each turn, applies them
and records a ``control`` event, so the trace shows who changed what and when. A request made in
this process also wakes the loop at once. A pause lasts for the session: ``cambrian resume``
starts proposing again.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from cambrian.config import RunConfig, stored_form
from cambrian.core.errors import ConfigError
from cambrian.core.events import ControlChanged
from cambrian.search.budget import BudgetManager
from cambrian.search.control_checks import (
    BUDGET_KEYS,
    budget_value,
    check_request,
    plan_budget,
    spent,
)
from cambrian.store.recorder import Recorder
from cambrian.store.rows import ControlRequest
from cambrian.store.run_files import write_config

IDLE_POLL_S = 0.5  # while paused or waiting, how often requests from another process are read
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControlAnswer:
    """A queued request and what the run will do with it ("evaluation budget 30 → 40
    children"); the run says whether it applied it with a ``control`` event naming
    ``request_id``."""

    request_id: int
    action: str
    payload: dict[str, Any]
    text: str


_WILL_DO = {"pause": "no new proposals after the ones in flight, until resume",
            "resume": "new proposals start again", "stop": "the run stops cleanly after the "
            "work in flight (cambrian resume continues it)"}


def request_control(recorder: Recorder, action: str, payload: dict[str, Any] | None = None,
                    source: str = "api", confirm: bool = False) -> int:
    """:func:`queue_control`'s request id."""
    return queue_control(recorder, action, payload, source, confirm).request_id


def queue_control(recorder: Recorder, action: str, payload: dict[str, Any] | None = None,
                  source: str = "api", confirm: bool = False) -> ControlAnswer:
    """Check a request (control_checks.py: the one check of every front end) and queue it
    for the run stored in ``recorder``'s store (any process may call it). ``confirm``: a budget
    that ends the run at once was confirmed by the person asking."""
    payload = dict(payload or {})
    check_request(action, payload)
    text = _WILL_DO.get(action, "")
    if action == "budget":
        store = recorder.store
        plan = plan_budget(payload, store.runs.info().config, spent(store), confirm)
        payload, text = dict(plan.values), plan.text
    with recorder.transaction():
        request_id = recorder.store.control.add(action, payload, source)
    return ControlAnswer(request_id, action, payload, text)


class RunControl:
    def __init__(self, recorder: Recorder, config: RunConfig, budget: BudgetManager,
                 run_dir: Any) -> None:
        self.recorder = recorder
        self.config = config
        self.budget = budget
        self.run_dir = run_dir
        self.paused = False
        self.stop_requested: str | None = None  # the source that asked to stop
        self._wake = asyncio.Event()

    def request(self, action: str, payload: dict[str, Any] | None = None,
                source: str = "api", confirm: bool = False) -> int:
        """Queue a request from this process and wake the loop."""
        request_id = request_control(self.recorder, action, payload, source, confirm)
        self._wake.set()
        return request_id

    def apply_pending(self) -> bool:
        """Apply every pending request in order; whether any was applied."""
        pending = self.recorder.store.control.pending()
        for request in pending:
            self._apply(request)
        return bool(pending)

    def _apply(self, request: ControlRequest) -> None:
        detail: dict[str, Any] = {}
        try:
            check_request(request.action, request.payload)
            if request.action == "pause":
                self.paused = True
            elif request.action == "resume":
                self.paused = False
            elif request.action == "stop":
                self.stop_requested = request.source
            else:
                detail = self._change_budget(request.payload)
        except (ConfigError, ValueError) as exc:
            detail = {"refused": str(exc)}
            log.warning("control request %s refused: %s", request.id, exc)
        with self.recorder.transaction():
            self.recorder.store.control.mark_applied(request.id)
            self.recorder.emit(ControlChanged(action=request.action, source=request.source,
                                              detail={**request.payload, **detail},
                                              request_id=request.id))

    def _change_budget(self, changes: dict[str, Any]) -> dict[str, Any]:
        before: dict[str, Any] = {}
        changes = {key: budget_value(key, value) for key, value in changes.items()}
        for key, value in changes.items():
            section = getattr(self.config, BUDGET_KEYS[key])
            before[key] = getattr(section, key)
            setattr(section, key, value)  # validated: the config models validate assignment
        self.budget.generations = self.config.evolution.generations
        with self.recorder.transaction():
            self.recorder.store.runs.update_config(stored_form(self.config))
        write_config(self.run_dir, self.config)
        return {"before": before}

    async def wait(self) -> None:
        """Until a request arrives from this process, or it is time to look for one from
        another process."""
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), IDLE_POLL_S)
        except asyncio.TimeoutError:
            pass
