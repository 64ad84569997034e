"""The run's tracker: a subscriber of its event bus that sends the run's parameters once, then
at every committed evaluation the score, the best score, the money, tokens and LLM calls spent
so far and the count of every kind of event, to each configured sink (MLflow, W&B).

A sink that fails is logged once and dropped; the search goes on. The ids of the trackers' runs
are kept in ``RUN_DIR/tracking.json``, so a resumed session continues the same tracked run.

The figures are read on the loop's thread (the store's connection is the loop's), and the sinks
are called on a thread of their own, in order: a tracking server that answers slowly delays the
export, never the search. Only the sinks' start is waited for (at most ``START_TIMEOUT_S``), once
per session: starting imports the sinks' libraries and builds their pydantic models, which runs
Python's ``ast`` parser, and CPython 3.11's AST constructor is not safe on two threads at once
(cpython#106905: "AST constructor recursion depth mismatch") while the loop parses candidates.
At the session's end the export is finished before the run returns.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cambrian.config.loading import stored_form
from cambrian.config.sections import RunConfig
from cambrian.core.errors import ConfigError
from cambrian.core.events import CandidateEvaluated, Event, SessionEnded, SessionStarted, kind_of
from cambrian.core.extras import MissingExtra
from cambrian.store.store import Store
from cambrian.tracking.sinks import TrackingSink, flat_params

log = logging.getLogger(__name__)
IDS_FILENAME = "tracking.json"
FINISH_TIMEOUT_S = 60.0  # the longest a session's end waits for the export to finish
START_TIMEOUT_S = 30.0  # the longest a session's start waits for the sinks to start


class SinkThread:
    """Runs the sinks' calls one after another on a daemon thread of its own."""

    def __init__(self) -> None:
        self._calls: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def submit(self, call: Callable[[], None]) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._work, name="cambrian-tracking",
                                            daemon=True)
            self._thread.start()
        self._calls.put(call)

    def wait(self, timeout_s: float) -> bool:
        """Wait for the calls submitted so far (at most ``timeout_s``); True when they are done."""
        done = threading.Event()
        self.submit(done.set)
        return done.wait(timeout_s)

    def finish(self, timeout_s: float = FINISH_TIMEOUT_S) -> None:
        """Wait for the calls submitted so far (at most ``timeout_s``), then end the thread."""
        if self._thread is None:
            return
        self._calls.put(None)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.warning("tracking export still running after %.0f s; the run goes on without "
                        "waiting for it", timeout_s)
        self._thread = None

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            call()


class RunTracker:
    def __init__(self, sinks: list[TrackingSink], store: Store, config: RunConfig,
                 run_dir: Path, task_name: str, start_timeout_s: float = START_TIMEOUT_S) -> None:
        self.sinks = sinks
        self.start_timeout_s = start_timeout_s
        self.store = store
        self.config = config
        self.run_dir = run_dir
        self.task_name = task_name
        self.events: Counter[str] = Counter()
        self.started = False
        self.step = 0
        self.thread = SinkThread()

    def __call__(self, event: Event) -> None:
        """The bus subscriber, on the loop's thread: reads the figures, hands the calls on."""
        self.events[kind_of(event)] += 1
        if isinstance(event, SessionStarted):
            params, tags = self._params(), self._tags()
            self._each(lambda sink: sink.start(params, tags))
            self.thread.submit(self._save_ids)
            if not self.thread.wait(self.start_timeout_s):
                log.warning("tracking still starting after %.0f s; the run goes on without "
                            "waiting for it", self.start_timeout_s)
            self.started = True
        elif isinstance(event, CandidateEvaluated) and self.started:
            self.step = event.evaluated
            metrics, step = self._metrics(event), event.evaluated
            self._each(lambda sink: sink.log(metrics, step))
        elif isinstance(event, SessionEnded) and self.started:
            metrics, step, outcome = self._metrics(None), self.step, event.outcome
            self._each(lambda sink: sink.log(metrics, step))
            self._each(lambda sink: sink.finish(outcome))
            self.thread.finish()
            self.started = False

    def _each(self, action: Callable[[TrackingSink], Any]) -> None:
        self.thread.submit(lambda: self._call_each(action))

    def _call_each(self, action: Callable[[TrackingSink], Any]) -> None:
        for sink in list(self.sinks):
            try:
                action(sink)
            except Exception as exc:  # noqa: BLE001 - a tracker never stops the search
                log.warning("tracking to %s failed and is turned off for this session: %s",
                            sink.name, exc)
                self.sinks.remove(sink)

    def _params(self) -> dict[str, str]:
        params = flat_params({key: value for key, value in stored_form(self.config).items()
                              if key != "tracking"})
        params["task"] = self.task_name
        return params

    def _tags(self) -> dict[str, str]:
        return {"cambrian.task": self.task_name, "cambrian.run_dir": str(self.run_dir),
                "cambrian.algorithm": self.config.search.algorithm}

    def _metrics(self, event: CandidateEvaluated | None) -> dict[str, float]:
        spend = self.store.contexts.spend()
        metrics: dict[str, float] = {"cost_usd": spend.cost_usd, "tokens": float(spend.tokens),
                                     "llm_calls": float(spend.calls)}
        if event is not None:
            metrics["evaluated"] = float(event.evaluated)
            metrics["correct"] = 1.0 if event.status == "ok" else 0.0
            for name, value in (("score", event.score), ("best_score", event.best_score)):
                if value is not None and math.isfinite(value):
                    metrics[name] = float(value)
        metrics.update({f"events.{kind}": float(n) for kind, n in self.events.items()})
        return metrics

    def _save_ids(self) -> None:
        ids = {sink.name: getattr(sink, "run_id", None) for sink in self.sinks}
        (self.run_dir / IDS_FILENAME).write_text(json.dumps(ids))


def saved_ids(run_dir: Path) -> dict[str, str]:
    try:
        data = json.loads((run_dir / IDS_FILENAME).read_text())
    except (OSError, ValueError):
        return {}
    return {k: str(v) for k, v in data.items() if v} if isinstance(data, dict) else {}


def build_tracker(config: RunConfig, store: Store, run_dir: Path,
                  task_name: str) -> RunTracker | None:
    """None when the config exports nowhere (no ``tracking:`` section)."""
    settings = config.tracking
    if settings.mlflow is None and settings.wandb is None:
        return None
    ids = saved_ids(run_dir)
    sinks: list[TrackingSink] = []
    try:
        if settings.mlflow is not None:
            from cambrian.tracking.mlflow_sink import MLflowSink

            sinks.append(MLflowSink(settings.mlflow, task_name, run_dir.name, ids.get("mlflow")))
        if settings.wandb is not None:
            from cambrian.tracking.wandb_sink import WandbSink

            sinks.append(WandbSink(settings.wandb, task_name, run_dir.name, run_dir,
                                   ids.get("wandb")))
    except MissingExtra:
        raise
    except Exception as exc:  # noqa: BLE001 - e.g. MLflow refusing the tracking URI
        raise ConfigError(f"tracking: {type(exc).__name__}: {exc}") from None
    return RunTracker(sinks, store, config, run_dir, task_name)


__all__ = ["RunTracker", "build_tracker", "saved_ids"]
