"""The tracker reads the run's figures on the loop's thread and calls its sinks on a thread of
their own: a slow tracking server delays the export, never the search (its start is waited for,
within a bound, once); at the session's end the export is finished, in order, before the run
returns."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from cambrian.config import RunConfig
from cambrian.core.events import CandidateEvaluated, SessionEnded, SessionStarted
from cambrian.store.store import Store
from cambrian.tracking.tracker import RunTracker


class BlockingSink:
    """A sink whose calls wait until the test lets them go, as a slow server would."""

    name = "blocking"
    run_id = "r1"

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls: list[tuple[str, Any]] = []
        self.threads: set[str] = set()

    def _record(self, name: str, value: Any) -> None:
        self.gate.wait(timeout=30)
        self.threads.add(threading.current_thread().name)
        self.calls.append((name, value))

    def start(self, params: dict[str, str], tags: dict[str, str]) -> None:
        self._record("start", params["task"])

    def log(self, metrics: dict[str, float], step: int) -> None:
        self._record("log", step)

    def finish(self, outcome: str) -> None:
        self._record("finish", outcome)


def test_a_slow_sink_never_holds_the_loop_and_the_end_waits_for_the_export(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    sink = BlockingSink()
    tracker = RunTracker([sink], store, RunConfig(), tmp_path / "run", "counter",
                         start_timeout_s=0.2)

    tracker(SessionStarted(pid=1))  # a start that hangs holds the loop only for the bound
    for n in (1, 2):
        tracker(CandidateEvaluated(candidate_id=n + 1, status="ok", score=float(n),
                                   best_score=float(n), evaluated=n, generations=5))
    assert sink.calls == []  # the loop went on while the sink is still waiting

    sink.gate.set()
    tracker(SessionEnded(reason="generation budget reached", outcome="completed"))
    assert sink.calls == [("start", "counter"), ("log", 1), ("log", 2), ("log", 2),
                          ("finish", "completed")]
    assert sink.threads == {"cambrian-tracking"}
    assert (tmp_path / "run" / "tracking.json").read_text() == '{"blocking": "r1"}'
    store.close()


def test_the_sinks_start_before_the_search_goes_on(tmp_path: Path):
    """Starting a sink imports its library and builds pydantic models (Python's ast parser),
    which must not overlap the loop's own parsing of candidates (cpython#106905)."""
    store = Store.open(tmp_path / "run", create=True)
    sink = BlockingSink()

    def slow_start(params: dict[str, str], tags: dict[str, str]) -> None:
        time.sleep(0.3)
        sink.calls.append(("start", params["task"]))

    sink.start = slow_start  # type: ignore[method-assign]
    tracker = RunTracker([sink], store, RunConfig(), tmp_path / "run", "counter")
    tracker(SessionStarted(pid=1))
    assert sink.calls == [("start", "counter")]
    assert (tmp_path / "run" / "tracking.json").exists()
    sink.gate.set()
    tracker(SessionEnded(reason="generation budget reached", outcome="completed"))
    store.close()
