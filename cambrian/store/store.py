"""The run store: one SQLite file per run (WAL), the only code of Cambrian that speaks SQL.

Every state change the search depends on is committed in one transaction together with the
record that caused it, so killing the process at any moment leaves a consistent store and
``resume`` simply reopens it. Each table is reached through a typed attribute::

    store.candidates.add(NewCandidate(...))      store.contexts.ledger()
    store.evaluations.latest(candidate_id)       store.events.list(SessionEnded)

A store written by an older Cambrian is migrated on open (``migrations.py``); a damaged,
foreign or newer file gives a :class:`StoreError` whose message says what to do.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from cambrian.store.browse import Browse
from cambrian.store.candidates import Candidates
from cambrian.store.column_rows import ColumnRows
from cambrian.store.contexts import Contexts
from cambrian.store.database import STORE_FILENAME, Database, StoreError
from cambrian.store.evaluations import Evaluations
from cambrian.store.events import Events
from cambrian.store.kv import Meta, SearchState
from cambrian.store.labels import EditLabels
from cambrian.store.lineage import Lineage
from cambrian.store.outcomes import Outcomes
from cambrian.store.plot_rows import PlotRows
from cambrian.store.raw_rows import RawRows
from cambrian.store.resume_snapshot import ResumeSnapshots
from cambrian.store.runs import Runs
from cambrian.store.side_tables import (
    ControlRequests,
    Embeddings,
    Guidance,
    MetaNotes,
    SystemPrompts,
)
from cambrian.store.views import Views

__all__ = ["STORE_FILENAME", "Store", "StoreError"]


class Store:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.path = database.path
        self.runs = Runs(database)
        self.evaluations = Evaluations(database)
        self.candidates = Candidates(database, self.evaluations)
        self.contexts = Contexts(database)
        self.events = Events(database)
        self.meta = Meta(database)
        self.state = SearchState(database)
        self.resume_snapshot = ResumeSnapshots(database)  # the loop's state, for a resume
        self.lineage = Lineage(database)
        self.meta_notes = MetaNotes(database)
        self.guidance = Guidance(database)
        self.prompts = SystemPrompts(database)
        self.embeddings = Embeddings(database)
        self.control = ControlRequests(database)
        self.labels = EditLabels(database)
        self.raw = RawRows(database)
        self.views = Views(database)  # aggregate reads for displays
        self.browse = Browse(database)  # the program browser's pages
        self.plot_rows = PlotRows(database)  # what the UI's plots are computed from
        self.column_rows = ColumnRows(database)  # the UI's column read models' rows
        self.outcomes = Outcomes(database)  # what each child became (statistics)

    @classmethod
    def open(cls, path: str | Path, *, create: bool = False, read_only: bool = False,
             secrets: Sequence[str] = ()) -> Store:
        """Open ``RUN_DIR/run.sqlite`` (or the ``.sqlite`` file given). ``secrets``: values
        (API keys) that must never be written; any text holding one is stored redacted."""
        return cls(Database.open(Path(path), create=create, read_only=read_only,
                                 secrets=secrets))

    def close(self) -> None:
        self.database.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes atomically; nested uses join the outermost transaction."""
        with self.database.transaction():
            yield

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
