"""A task folder shipped to Ray workers: its files' bytes, checked against the hashes the
driver's evaluator took when it was built, and written once per node into a read-only copy.

Workers never read the driver's task folder (it may be on another machine): they evaluate in a
copy made from these bytes, and the evaluator they build there hashes that copy again before
every evaluation, exactly as a local evaluator hashes the task folder (``task_files.py``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

from cambrian.evaluate.task_files import TaskFiles, TaskFilesChanged

COMPLETE_MARKER = ".cambrian-bundle-complete"  # hidden: never part of a snapshot of the copy


@dataclass(frozen=True)
class BundledFile:
    relative: str
    digest: str
    mode: int
    data: bytes


@dataclass(frozen=True)
class TaskBundle:
    files: tuple[BundledFile, ...]
    digest: str  # of the (relative path, file digest) pairs: names the copy on each node

    @classmethod
    def of(cls, task_files: TaskFiles) -> TaskBundle:
        """The snapshot's files as they are now; TaskFilesChanged when one changed since."""
        files = []
        for entry in task_files.files:
            source = task_files.source(entry.relative)
            try:
                data = source.read_bytes()
            except OSError:
                raise TaskFilesChanged(source, "was removed") from None
            if hashlib.sha256(data).hexdigest() != entry.digest:
                raise TaskFilesChanged(source, "changed")
            files.append(BundledFile(entry.relative, entry.digest,
                                     stat.S_IMODE(source.stat().st_mode), data))
        return cls(tuple(files), digest_of((f.relative, f.digest) for f in files))

    def hashes(self) -> set[tuple[str, str]]:
        return {(f.relative, f.digest) for f in self.files}

    def materialize(self, parent: Path) -> Path:
        """The read-only copy under ``parent`` (written once; concurrent writers on one node
        each build under a temporary name, and the first rename wins)."""
        target = Path(parent) / self.digest[:24]
        if (target / COMPLETE_MARKER).is_file():
            return target
        parent = Path(parent)
        parent.mkdir(parents=True, exist_ok=True)
        building = parent / f".tmp-{self.digest[:16]}-{uuid.uuid4().hex[:8]}"
        try:
            for entry in self.files:
                path = building / entry.relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(entry.data)
                path.chmod(entry.mode & 0o555 | 0o444)
            (building / COMPLETE_MARKER).write_text(self.digest)
            try:
                os.rename(building, target)
            except OSError:
                if not (target / COMPLETE_MARKER).is_file():
                    raise
        finally:
            if building.exists():
                shutil.rmtree(building, ignore_errors=True)
        return target


def digest_of(pairs: object) -> str:
    digest = hashlib.sha256()
    for relative, file_digest in sorted(pairs):  # type: ignore[call-overload]
        digest.update(f"{relative}\0{file_digest}\0".encode())
    return digest.hexdigest()


def check_copy(bundle: TaskBundle, snapshot: TaskFiles) -> None:
    """The evaluator a worker built must see exactly the bundle's files."""
    seen = {(f.relative, f.digest) for f in snapshot.files}
    if seen != bundle.hashes():
        differing = sorted({r for r, _ in seen ^ bundle.hashes()})
        raise TaskFilesChanged(snapshot.root / (differing[0] if differing else ""),
                               "differs from the driver's task folder in the worker's copy")
