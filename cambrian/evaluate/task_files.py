"""The task's files an evaluator needs: hashed when the evaluator is built, copied, verified,
into every evaluation's scratch folder.

An evaluation never runs in (or writes to) the task folder: `TaskFiles.materialize` copies
each file into the scratch folder (same relative paths, so an evaluator opening sibling data
files by path or from its working directory still finds them), hashing the bytes it copies;
a file whose hash differs from the one recorded at build time, or that vanished, raises
`TaskFilesChanged` naming it. A candidate that managed to rewrite the evaluator is therefore
caught before the next evaluation instead of scoring every later child.

Left out: hidden entries (.git, .venv, ...), __pycache__ and *.pyc, and run folders
(`runs/`, or any folder holding a `run.sqlite`), so a run directory inside the task folder is
never copied into itself.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

MAX_FILES = 10_000
MAX_TOTAL_BYTES = 512 * 1024 * 1024
LARGE_TOTAL_BYTES = 32 * 1024 * 1024
SKIPPED_DIRS = frozenset({"__pycache__", "runs", "node_modules"})
RUN_STORE_NAME = "run.sqlite"
CHUNK = 1024 * 1024


class TaskFilesChanged(RuntimeError):
    """A task file changed (or vanished) after the evaluator was built."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(
            f"task file {path} {detail} since the evaluator was built; every later score "
            "would be meaningless, so evaluation stops here (restore the file, or start a new "
            "run if the change is intended)"
        )
        self.path = path


@dataclass(frozen=True)
class TaskFile:
    relative: str
    digest: str
    size: int


def _skipped_dir(path: Path) -> bool:
    name = path.name
    return name.startswith(".") or name in SKIPPED_DIRS or (path / RUN_STORE_NAME).exists()


def _walk(root: Path) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        dirs[:] = sorted(d for d in dirs if not _skipped_dir(base / d))
        for name in sorted(files):
            path = base / name
            if name.startswith(".") or name.endswith(".pyc") or not path.is_file():
                continue  # hidden, bytecode, sockets, dangling links
            found.append(path)
    return found


def _copy_hashing(source: Path, target: Path | None) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(source, "rb") as reader:
        writer = open(target, "wb") if target is not None else None
        try:
            while chunk := reader.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
                if writer is not None:
                    writer.write(chunk)
        finally:
            if writer is not None:
                writer.close()
    return digest.hexdigest(), size


class TaskFiles:
    """The files of `root` (plus the evaluator, wherever it is), by relative path and hash."""

    def __init__(self, root: Path, files: list[TaskFile], extra: dict[str, Path]) -> None:
        self.root = root
        self.files = files
        self._extra = extra  # relative name in the scratch folder -> source outside `root`

    @classmethod
    def snapshot(cls, root: Path, evaluator_path: Path,
                 exclude: Sequence[Path] = ()) -> TaskFiles:
        """`exclude`: files or folders of `root` left out (a judged task's held-out cases,
        which never travel to where candidates are evaluated)."""
        root = Path(root).resolve()
        evaluator_path = Path(evaluator_path).resolve()
        left_out = [Path(path).resolve() for path in exclude]
        sources = [path for path in _walk(root)
                   if not any(path == out or out in path.parents for out in left_out)]
        extra: dict[str, Path] = {}
        if root not in evaluator_path.parents:
            extra[evaluator_path.name] = evaluator_path
        elif evaluator_path not in sources:
            sources.append(evaluator_path)  # e.g. a hidden evaluator file: always needed
        if len(sources) > MAX_FILES:
            raise ValueError(
                f"task folder {root} holds more than {MAX_FILES} files; every evaluation copies "
                "them into its scratch folder -- move data the evaluator does not need elsewhere"
            )
        files, total = [], 0
        for source in sources:
            relative = source.relative_to(root).as_posix()
            digest, size = _copy_hashing(source, None)
            files.append(TaskFile(relative, digest, size))
            total += size
        for name, source in extra.items():
            digest, size = _copy_hashing(source, None)
            files.append(TaskFile(name, digest, size))
            total += size
        if total > MAX_TOTAL_BYTES:
            raise ValueError(
                f"task folder {root} holds {total // 2**20} MB; every evaluation copies it into "
                f"its scratch folder (limit {MAX_TOTAL_BYTES // 2**20} MB)"
            )
        if total > LARGE_TOTAL_BYTES:
            log.warning("task folder %s holds %d MB, copied into every evaluation's scratch "
                        "folder", root, total // 2**20)
        return cls(root, files, extra)

    def source(self, relative: str) -> Path:
        return self._extra.get(relative) or self.root / relative

    def relative_path(self, path: Path) -> str:
        path = Path(path).resolve()
        for name, source in self._extra.items():
            if source == path:
                return name
        return path.relative_to(self.root).as_posix()

    def materialize(self, scratch: Path) -> None:
        """Copies every file into `scratch`, checking it against its recorded hash.

        Raises TaskFilesChanged for a file that changed or vanished.
        """
        scratch = Path(scratch)
        for entry in self.files:
            source, target = self.source(entry.relative), scratch / entry.relative
            if not source.is_file():
                raise TaskFilesChanged(source, "was removed")
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.is_symlink() or target.exists():
                target.unlink()
            digest, _ = _copy_hashing(source, target)
            if digest != entry.digest:
                target.unlink()
                raise TaskFilesChanged(source, "changed")
            mode = stat.S_IMODE(source.stat().st_mode)
            target.chmod(mode & 0o555 | 0o444)  # readable, never writable: copies, not drafts

    def verify(self) -> None:
        """Re-hashes the task folder's files; raises TaskFilesChanged for a changed one."""
        for entry in self.files:
            source = self.source(entry.relative)
            if not source.is_file():
                raise TaskFilesChanged(source, "was removed")
            if _copy_hashing(source, None)[0] != entry.digest:
                raise TaskFilesChanged(source, "changed")
