"""Running one cell of the grid: start it, resume it if an earlier benchmark was interrupted, or
skip it when it already finished."""

from __future__ import annotations

import asyncio
import enum
import re
import signal
from pathlib import Path

from cambrian.api import resume, start
from cambrian.bench.spec import BenchCell, BenchError
from cambrian.config import build_config
from cambrian.core.bus import Subscriber
from cambrian.core.events import SessionEnded, SessionStarted
from cambrian.core.status import EVALUATED, CandidateStatus
from cambrian.search.engine import Evolution, RunSummary
from cambrian.store.store import STORE_FILENAME, Store, StoreError

# The engine ends a session that an exception stopped with "<ExceptionType>: <message>"
# (Ctrl-C, SIGTERM, an aborted run); a clean stop is a sentence ("generation budget reached").
_EXCEPTION_REASON = re.compile(r"^[A-Za-z_][\w.]*:( |$)")


class RunState(enum.Enum):
    NEW = "new"
    RESUME = "resume"
    COMPLETE = "complete"


def evaluated_children(store: Store) -> int:
    return max(0, store.candidates.count(*EVALUATED) - 1)


def _last_session_ended_cleanly(store: Store) -> bool:
    starts = store.events.list(SessionStarted)
    ends = store.events.list(SessionEnded)
    if not ends or (starts and starts[-1].created_at > ends[-1].created_at):
        return False  # killed: its last session never ended
    last = ends[-1].event
    return isinstance(last, SessionEnded) and not _EXCEPTION_REASON.match(last.reason)


def run_state(store: Store, budget: int) -> RunState:
    """COMPLETE when the run evaluated ``budget`` children, or when a session given at least that
    budget stopped by itself (e.g. on a cost cap): running it again would change nothing."""
    if evaluated_children(store) >= budget:
        return RunState.COMPLETE
    configured = int(store.runs.info().config["evolution"]["generations"])
    if (configured >= budget and store.candidates.count(CandidateStatus.PENDING) == 0
            and _last_session_ended_cleanly(store)):
        return RunState.COMPLETE
    return RunState.RESUME


def check_same_settings(store: Store, cell: BenchCell) -> None:
    """An existing run must have been started with this cell's settings (the budget aside), or its
    results would be mixed into the wrong comparison."""
    stored = store.runs.info().config
    sets = [o for o in cell.overrides if not o.startswith("evolution.generations=")]
    as_stored = build_config([stored]).model_dump(mode="json")
    as_asked = build_config([stored], sets).model_dump(mode="json")
    differing: list[str] = []
    for section, values in as_asked.items():
        before = as_stored.get(section)
        if isinstance(values, dict) and isinstance(before, dict):
            differing += [f"{section}.{key}" for key in values if values[key] != before.get(key)]
        elif values != before:
            differing.append(section)
    if differing:
        raise BenchError(f"{cell.run_dir} holds a run started with other settings "
                         f"({', '.join(sorted(differing))}); use another --out or delete that run")


def _drop_empty_store(run_dir: Path) -> None:
    """A start killed before its first commit leaves a store without a run: nothing to keep."""
    for suffix in ("", "-wal", "-shm"):
        (run_dir / f"{STORE_FILENAME}{suffix}").unlink(missing_ok=True)


def prepare(cell: BenchCell, budget: int) -> RunState:
    """The state of the cell's run directory, after checking that it belongs to this cell."""
    if not (cell.run_dir / STORE_FILENAME).exists():
        return RunState.NEW
    store = Store.open(cell.run_dir)
    try:
        store.runs.info()
    except StoreError:
        store.close()
        _drop_empty_store(cell.run_dir)
        return RunState.NEW
    try:
        check_same_settings(store, cell)
        return run_state(store, budget)
    finally:
        store.close()


def open_evolution(cell: BenchCell, state: RunState, budget: int,
                   subscribers: list[Subscriber]) -> Evolution:
    """Each run builds its own LLM providers, as ``cambrian run`` does: a local model's sampling
    seeds then depend on the run alone, not on the runs the benchmark did before it."""
    if state is RunState.NEW:
        return start(cell.task.task_dir, overrides=list(cell.overrides), run_dir=cell.run_dir,
                     subscribers=subscribers)
    store = Store.open(cell.run_dir)
    try:
        configured = int(store.runs.info().config["evolution"]["generations"])
    finally:
        store.close()
    sets = [] if configured == budget else [f"evolution.generations={budget}"]
    return resume(cell.run_dir, overrides=sets, subscribers=subscribers)


def drive(evolution: Evolution) -> RunSummary:
    """Run to the end; SIGTERM stops it like Ctrl-C, so the store records why the session ended."""

    async def main() -> RunSummary:
        task = asyncio.current_task()
        assert task is not None
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # not the main thread, or a platform without signal handlers
        return await evolution.run()

    try:
        return asyncio.run(main())
    finally:
        evolution.store.close()
