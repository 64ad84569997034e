"""Whether a run is running, and whether its proposals are paused: what ``cambrian status``,
the web UI's runs list and overview, and the run's own terminal all say, read from the store
(the sessions and control events) and the run's live feed (does its process answer)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cambrian.core.events import ControlChanged, SessionEnded, SessionStarted
from cambrian.core.outcomes import RunOutcome
from cambrian.search.live_feed import probe
from cambrian.store.store import Store

RUNNING, STOPPED, FINISHED, FAILED = "running", "stopped", "finished", "failed"
IMPORTED = "imported"
FINISHED_OUTCOMES = {RunOutcome.COMPLETED.word, RunOutcome.BUDGET_REACHED.word,
                     RunOutcome.TARGET_REACHED.word, RunOutcome.NO_IMPROVEMENT.word}
STOPPED_OUTCOMES = {RunOutcome.STOPPED.word, RunOutcome.INTERRUPTED.word}


@dataclass(frozen=True)
class RunState:
    status: str  # running | stopped | finished | failed | imported
    detail: str  # the last session's stop reason, or why it is thought stopped
    paused: bool = False  # running, with its proposals paused

    @property
    def words(self) -> str:
        """"running, paused", "stopped"..."""
        return f"{self.status}, paused" if self.paused else self.status


def paused(store: Store) -> bool:
    """Whether the current session's proposals are paused (a pause lasts for its session)."""
    state = False
    for stored in store.events.list(SessionStarted, ControlChanged):
        if isinstance(stored.event, SessionStarted):
            state = False
        elif getattr(stored.event, "action", "") in ("pause", "resume"):
            applied = not (getattr(stored.event, "detail", None) or {}).get("refused")
            if applied:
                state = getattr(stored.event, "action", "") == "pause"
    return state


def run_state(store: Store, run_dir: Path, framework: str = "cambrian") -> RunState:
    """A run is running while its last session has no end and its live feed answers; else
    its last session's outcome says stopped, finished or failed."""
    if framework != "cambrian":
        return RunState(IMPORTED, f"imported {framework} trace")
    marks = store.events.list(SessionStarted, SessionEnded)
    if not marks:
        return RunState(STOPPED, "never started")
    last = marks[-1].event
    if isinstance(last, SessionStarted):
        if probe(run_dir):
            held = paused(store)
            return RunState(RUNNING, f"running (pid {last.pid})"
                            + ("; proposals paused (resume to go on)" if held else ""), held)
        return RunState(STOPPED, "killed: its session ended without a record")
    assert isinstance(last, SessionEnded)
    if last.outcome in FINISHED_OUTCOMES or not last.outcome:
        return RunState(FINISHED, last.reason)
    if last.outcome in STOPPED_OUTCOMES:
        return RunState(STOPPED, last.reason)
    return RunState(FAILED, last.reason)
