"""Human guidance for a running search (seed 003, human-in-the-loop).

While a run goes on, a person can append guidance, replace it, or revert the last change, either
with ``cambrian guide RUN_DIR ...`` or by editing ``RUN_DIR/guidance.md``. The text is added to
every mutation prompt from the next proposal on. Every change is a row of the ``guidance`` table
with its time, and each candidate's notes record the guidance version it saw, so the trace shows
exactly which guidance each proposal was given.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from cambrian.store.store import Store

GUIDANCE_FILENAME = "guidance.md"
Action = Literal["append", "replace", "revert", "clear"]

DDL = """
CREATE TABLE IF NOT EXISTS guidance (
    id INTEGER PRIMARY KEY,
    created_at REAL NOT NULL,
    action TEXT NOT NULL,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    active_text TEXT NOT NULL,
    restores_id INTEGER
);
"""


@dataclass(frozen=True)
class GuidanceVersion:
    id: int  # 0: no guidance has ever been given
    text: str
    created_at: float = 0.0
    action: str = ""
    source: str = ""


class GuidanceBoard:
    def __init__(self, store: Store, run_dir: Path | None = None) -> None:
        self.store = store
        self.file = (Path(run_dir) / GUIDANCE_FILENAME) if run_dir is not None else None
        store.execute(DDL)

    def history(self) -> list[GuidanceVersion]:
        rows = self.store.execute(
            "SELECT id, active_text, created_at, action, source FROM guidance ORDER BY id"
        ).fetchall()
        return [GuidanceVersion(int(r[0]), r[1], float(r[2]), r[3], r[4]) for r in rows]

    def current(self) -> GuidanceVersion:
        row = self.store.execute(
            "SELECT id, active_text, created_at, action, source FROM guidance ORDER BY id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return GuidanceVersion(0, "")
        return GuidanceVersion(int(row[0]), row[1], float(row[2]), row[3], row[4])

    def change(self, action: Action, text: str = "", source: str = "cli") -> GuidanceVersion:
        """Apply one change and return the new active guidance."""
        text = text.strip()
        now = self.current()
        restores: int | None = None
        if action == "append":
            if not text:
                raise ValueError("guidance to append is empty")
            active = f"{now.text}\n{text}".strip()
        elif action == "replace":
            active = text
        elif action == "clear":
            active = ""
        elif action == "revert":
            previous = self._before(now.id)
            if now.id == 0:
                raise ValueError("there is no guidance change to revert")
            active, restores = (previous.text, previous.id) if previous else ("", 0)
        else:
            raise ValueError(f"unknown guidance action {action!r}")
        with self.store.transaction():
            cursor = self.store.execute(
                "INSERT INTO guidance(created_at, action, source, text, active_text, restores_id) "
                "VALUES (?,?,?,?,?,?)", (time.time(), action, source, text, active, restores),
            )
        if source != "file":
            self._write_file(active)
        return GuidanceVersion(int(cursor.lastrowid), active, time.time(), action, source)

    def _before(self, version_id: int) -> GuidanceVersion | None:
        """The version that was active just before ``version_id`` (following earlier reverts)."""
        row = self.store.execute(
            "SELECT restores_id FROM guidance WHERE id=?", (version_id,)).fetchone()
        anchor = version_id
        if row is not None and row[0] is not None:  # reverting a revert: step back from its target
            anchor = int(row[0])
        earlier = self.store.execute(
            "SELECT id, active_text, created_at, action, source FROM guidance WHERE id<? "
            "ORDER BY id DESC LIMIT 1", (anchor,)).fetchone()
        if earlier is None:
            return None
        return GuidanceVersion(int(earlier[0]), earlier[1], float(earlier[2]), earlier[3], earlier[4])

    # ------------------------------------------------------------------ the watched file

    def _write_file(self, text: str) -> None:
        if self.file is None:
            return
        self.file.write_text(text + ("\n" if text else ""))
        self.store.set_meta("guidance_file_hash", _digest(self.file.read_text()))

    def sync_file(self) -> GuidanceVersion:
        """Take in an edit of ``guidance.md`` made since we last looked; return the current text."""
        if self.file is not None and self.file.exists():
            content = self.file.read_text()
            digest = _digest(content)
            if digest != self.store.get_meta("guidance_file_hash"):
                self.store.set_meta("guidance_file_hash", digest)
                if content.strip() != self.current().text:
                    return self.change("replace", content, source="file")
        return self.current()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
