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
from typing import Any

from cambrian.config import RunConfig
from cambrian.core.errors import ConfigError
from cambrian.core.events import ControlChanged
from cambrian.search.budget import BudgetManager
from cambrian.store.recorder import Recorder
from cambrian.store.rows import ControlRequest
from cambrian.store.run_files import write_config

ACTIONS = ("pause", "resume", "stop", "budget")
# What a ``budget`` request may change, and where it lives in the configuration.
BUDGET_KEYS = {"generations": "evolution", "max_cost_usd": "budget", "max_tokens": "budget",
               "max_llm_calls": "budget", "max_wall_time_s": "budget"}
IDLE_POLL_S = 0.5  # while paused or waiting, how often requests from another process are read
log = logging.getLogger(__name__)


def check_request(action: str, payload: dict[str, Any]) -> None:
    """A clear error for a request the loop could not apply."""
    if action not in ACTIONS:
        raise ConfigError(f"unknown control action {action!r}; one of {', '.join(ACTIONS)}")
    if action == "budget":
        unknown = set(payload) - set(BUDGET_KEYS)
        if unknown or not payload:
            raise ConfigError(f"a budget request changes one of {', '.join(BUDGET_KEYS)}; "
                              f"got {sorted(payload) or 'nothing'}")


def request_control(recorder: Recorder, action: str, payload: dict[str, Any] | None = None,
                    source: str = "api") -> int:
    """Queue a request for the run stored in ``recorder``'s store (any process may call it)."""
    payload = dict(payload or {})
    check_request(action, payload)
    with recorder.transaction():
        return recorder.store.control.add(action, payload, source)


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
                source: str = "api") -> int:
        """Queue a request from this process and wake the loop."""
        request_id = request_control(self.recorder, action, payload, source)
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
                                              detail={**request.payload, **detail}))

    def _change_budget(self, changes: dict[str, Any]) -> dict[str, Any]:
        before: dict[str, Any] = {}
        for key, value in changes.items():
            section = getattr(self.config, BUDGET_KEYS[key])
            before[key] = getattr(section, key)
            setattr(section, key, value)  # validated: the config models validate assignment
        self.budget.generations = self.config.evolution.generations
        with self.recorder.transaction():
            self.recorder.store.runs.update_config(self.config.model_dump(mode="json"))
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
