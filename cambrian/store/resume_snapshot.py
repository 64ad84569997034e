"""The resume snapshot's row (``resume_snapshot``, one per run): a header (JSON: what the
snapshot covers, how it was made, the payload's digest) and the payload (bytes), written and read
whole. What the payload holds and when it may be used is ``search/resume_snapshot.py``'s business;
this module only stores it, refusing a payload that holds one of the run's secret values (a
binary payload cannot be redacted), and says what the store holds beyond it (the rows a resume
replays after it are ``Candidates.replay_rows(after_evaluation=...)``)."""

from __future__ import annotations

import time
from typing import Any

from cambrian.store.codec import loads
from cambrian.store.database import Database


class SecretInPayload(ValueError):
    """The payload holds one of the run's secret values; it was not written."""


class ResumeSnapshots:
    def __init__(self, db: Database) -> None:
        self._db = db

    def put(self, header: dict[str, Any], payload: bytes) -> None:
        """Replace the stored snapshot (the caller's transaction, or its own)."""
        for secret in self._db.codec.secrets:
            if secret.encode() in payload:
                raise SecretInPayload("the search state holds a secret value")
        self._db.execute(
            "INSERT OR REPLACE INTO resume_snapshot(id, header_json, payload, created_at) "
            "VALUES (1, ?, ?, ?)", (self._db.codec.json(header), payload, time.time()))

    def header(self) -> dict[str, Any] | None:
        """The stored snapshot's header, without reading its payload; None when there is none
        or it is unreadable."""
        raw = self._db.one("SELECT header_json FROM resume_snapshot WHERE id=1")
        try:
            header = loads(raw, None)
        except ValueError:
            return {}  # present but unreadable: the caller says so and replays
        return header if isinstance(header, dict) or header is None else {}

    def payload(self) -> bytes | None:
        raw = self._db.one("SELECT payload FROM resume_snapshot WHERE id=1")
        return bytes(raw) if isinstance(raw, (bytes, bytearray, memoryview)) else None

    def delete(self) -> None:
        self._db.execute("DELETE FROM resume_snapshot")

    # ------------------------------------------------------------------ what comes after it

    def last_evaluation_id(self) -> int:
        return int(self._db.one("SELECT COALESCE(MAX(id), 0) FROM evaluations"))

    def last_candidate_id(self) -> int:
        return int(self._db.one("SELECT COALESCE(MAX(id), 0) FROM candidates"))

    def reevaluated_before(self, evaluation_id: int) -> bool:
        """Whether a candidate evaluated at or before ``evaluation_id`` has a later evaluation
        row (the snapshot's record of it would then be stale)."""
        return self._db.one(
            "SELECT 1 FROM evaluations e WHERE e.id > ? AND EXISTS (SELECT 1 FROM evaluations "
            "o WHERE o.candidate_id = e.candidate_id AND o.id <= ?) LIMIT 1",
            (evaluation_id, evaluation_id)) is not None
