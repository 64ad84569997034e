"""The files of programs of several files: ``blobs`` (each text once, keyed by its SHA-256) and
``candidate_files`` (a candidate's manifest: position, path, text hash). A one-file program
stays in ``candidates.source``; ``Candidates`` writes and reads these tables for the others,
whose program text is the bundle of their files (``cambrian/task/program_files.py``)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from cambrian.store.database import Database
from cambrian.task.program_files import ProgramFile, join_files

_QUERY_CHUNK = 500  # below SQLite's bound-parameter limit


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class ProgramBlobs:
    def __init__(self, db: Database) -> None:
        self._db = db

    def put(self, candidate_id: int, files: Sequence[ProgramFile]) -> None:
        """Store ``candidate_id``'s files: a text already held by another candidate (the files
        a child did not change) is not stored again."""
        for position, file in enumerate(files):
            text = self._db.codec.text(file.text) or ""
            digest = text_hash(text)
            self._db.execute("INSERT OR IGNORE INTO blobs(sha256, text) VALUES (?, ?)",
                             (digest, text))
            self._db.execute("INSERT INTO candidate_files(candidate_id, position, path, sha256) "
                             "VALUES (?, ?, ?, ?)", (candidate_id, position, file.path, digest))

    def files(self, candidate_id: int) -> list[ProgramFile]:
        """The candidate's files in order ([] for a one-file program)."""
        return self.files_of([candidate_id]).get(candidate_id, [])

    def files_of(self, ids: Sequence[int]) -> dict[int, list[ProgramFile]]:
        """The files of those of ``ids`` that are programs of several files."""
        found: dict[int, list[ProgramFile]] = {}
        ordered = sorted(set(ids))
        for start in range(0, len(ordered), _QUERY_CHUNK):
            chunk = ordered[start:start + _QUERY_CHUNK]
            rows = self._db.execute(
                "SELECT f.candidate_id, f.path, b.text FROM candidate_files f JOIN blobs b "
                f"ON b.sha256 = f.sha256 WHERE f.candidate_id IN ({','.join('?' * len(chunk))}) "
                "ORDER BY f.candidate_id, f.position", tuple(chunk))
            for candidate_id, path, text in rows:
                found.setdefault(int(candidate_id), []).append(ProgramFile(path, text))
        return found

    def bundles(self, ids: Sequence[int]) -> dict[int, str]:
        """The program text of each of ``ids`` that is a program of several files."""
        return {i: join_files(files) for i, files in self.files_of(ids).items()}

    def stored_chars(self) -> tuple[int, int]:
        """(characters the blobs hold, characters the manifests name): what deduplication
        saves."""
        held = self._db.one("SELECT COALESCE(SUM(length(text)), 0) FROM blobs")
        named = self._db.one("SELECT COALESCE(SUM(length(b.text)), 0) FROM candidate_files f "
                             "JOIN blobs b ON b.sha256 = f.sha256")
        return int(held), int(named)
