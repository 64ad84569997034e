"""Human guidance for a running search (seed 003, human-in-the-loop; SkyDiscover's steering).

While a run goes on, a person can append guidance, replace it, or revert the last change, with
``cambrian guide RUN_DIR ...``, the web UI, or by editing ``RUN_DIR/guidance.md``. The global
text is added to every mutation prompt from the next proposal on; guidance *targeted* at a
candidate (``candidate:ID``) reaches proposals whose parent is that program, guidance targeted
at a lineage (``lineage:ID``) proposals whose parent descends from it. Every change is a row of
the ``guidance`` table and a ``guidance_change`` event, and each candidate's notes record the
guidance versions it saw, so the trace shows exactly who changed what, when, and which
proposals were given it.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Literal

from cambrian.config import PromptConfig
from cambrian.core.events import GuidanceChanged
from cambrian.store.database import StoreError
from cambrian.store.recorder import Recorder
from cambrian.store.rows import GuidanceRow

GUIDANCE_FILENAME = "guidance.md"
FILE_HASH_KEY = "guidance_file_hash"
Action = Literal["append", "replace", "revert", "clear"]
ACTIONS: tuple[str, ...] = ("append", "replace", "revert", "clear")
_TARGET = re.compile(r"^(candidate|lineage):(\d+)$")
NO_GUIDANCE = GuidanceRow(0, "")
DEFAULT_MAX_CHARS = int(PromptConfig.model_fields["max_guidance_chars"].default)
log = logging.getLogger(__name__)


class GuidanceRefused(ValueError):
    """A guidance change refused where it was made; the message says why, in one line."""


def check_target(target: str) -> str:
    """``""`` (every prompt), ``candidate:ID`` or ``lineage:ID``; anything else is an error."""
    if target and not _TARGET.match(target):
        raise ValueError(f"guidance target must be candidate:ID or lineage:ID, got {target!r}")
    return target


class GuidanceBoard:
    def __init__(self, recorder: Recorder, run_dir: Path | None = None) -> None:
        self.recorder = recorder
        self.store = recorder.store
        self.file = (Path(run_dir) / GUIDANCE_FILENAME) if run_dir is not None else None

    @property
    def max_chars(self) -> int:
        """The run's ``prompt.max_guidance_chars``: what the active guidance may hold."""
        try:
            prompt = self.store.runs.info().config.get("prompt") or {}
        except StoreError:  # a store without a run row
            return DEFAULT_MAX_CHARS
        return int(prompt.get("max_guidance_chars") or DEFAULT_MAX_CHARS)

    def check_target(self, target: str) -> str:
        """A well-formed target naming a candidate this run has."""
        target = check_target(target)
        if target:
            number = int(target.split(":")[1])
            if not self.store.candidates.exists(number):
                raise GuidanceRefused(f"guidance target {target}: this run has no candidate "
                                      f"{number}")
        return target

    def history(self, target: str | None = None) -> list[GuidanceRow]:
        return self.store.guidance.history(target)

    def current(self, target: str = "") -> GuidanceRow:
        return self.store.guidance.latest(target) or NO_GUIDANCE

    def change(self, action: Action | str, text: str = "", source: str = "cli",
               target: str = "") -> GuidanceRow:
        """Apply one change and return the new active guidance (of ``target``); a change to a
        candidate this run does not have, or one leaving more than ``max_chars`` characters
        active, is refused (:class:`GuidanceRefused`)."""
        target = self.check_target(target)
        text = text.strip()
        now = self.current(target)
        restores: int | None = None
        if action == "append":
            if not text:
                raise ValueError("guidance to append is empty")
            active = f"{now.text}\n{text}".strip()
        elif action == "replace":
            if not text:
                raise ValueError("replacing the guidance with nothing would clear it; use "
                                 "clear for that")
            active = text
        elif action == "clear":
            active = ""
        elif action == "revert":
            if now.id == 0:
                raise ValueError("there is no guidance change to revert")
            previous = self._before(now, target)
            active, restores = (previous.text, previous.id) if previous else ("", 0)
        else:
            raise ValueError(f"unknown guidance action {action!r}; one of {', '.join(ACTIONS)}")
        limit = self.max_chars
        if len(active) > limit:
            raise GuidanceRefused(
                f"guidance refused: it would leave {len(active):,} characters active, over the "
                f"limit of {limit:,} (prompt.max_guidance_chars); the guidance active now "
                f"({len(now.text):,} characters) stays")
        with self.recorder.transaction():
            version = self.store.guidance.add(action=action, source=source, text=text,
                                              active_text=active, restores_id=restores,
                                              target=target)
            self.recorder.emit(GuidanceChanged(version_id=version.id, action=action,
                                               source=source, active_text=active, target=target))
        if source != "file" and not target:
            self._write_file(active)
        return version

    def _before(self, version: GuidanceRow, target: str) -> GuidanceRow | None:
        """The version active just before ``version`` (following earlier reverts)."""
        anchor = version.id
        if version.restores_id is not None:  # reverting a revert: step back from its target
            anchor = version.restores_id
        return self.store.guidance.before(anchor, target)

    def for_candidate(self, candidate_id: int) -> list[GuidanceRow]:
        """Active targeted guidance that applies to proposals from ``candidate_id``."""
        targets = self.store.guidance.targets()
        if not targets:
            return []
        ancestors = {a.id for a in self.store.lineage.ancestry(candidate_id)}
        found = []
        for target in targets:
            kind, number = target.split(":")
            if (kind == "candidate" and int(number) == candidate_id) or (
                    kind == "lineage" and int(number) in ancestors):
                version = self.current(target)
                if version.text:
                    found.append(version)
        return found

    # ------------------------------------------------------------------ the watched file

    def _write_file(self, text: str) -> None:
        if self.file is None:
            return
        self.file.write_text(text + ("\n" if text else ""))
        self.store.meta.set(FILE_HASH_KEY, _digest(self.file.read_text()))

    def sync_file(self) -> GuidanceRow:
        """Take in an edit of ``guidance.md`` made since we last looked; the current guidance."""
        if self.file is not None and self.file.exists():
            content = self.file.read_text()
            digest = _digest(content)
            if digest != self.store.meta.get(FILE_HASH_KEY):
                self.store.meta.set(FILE_HASH_KEY, digest)
                if content.strip() != self.current().text:
                    try:
                        return self.change("replace", content, source="file")
                    except GuidanceRefused as exc:  # the edit is not taken; the run goes on
                        log.warning("%s: %s", self.file, exc)
        return self.current()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
