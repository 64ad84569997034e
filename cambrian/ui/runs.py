"""Which runs the UI shows: Cambrian run folders found under the folders it was given, and
ShinkaEvolve, OpenEvolve and exported traces, imported once into a cache folder (the foreign
trace is never written to) and shown read-only."""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cambrian.store.database import STORE_FILENAME
from cambrian.store.store import Store

SEARCH_DEPTH = 3  # folders below each given folder that are searched for runs
_SKIP = {"__pycache__", "node_modules", "best", "programs", "cases"}


@dataclass(frozen=True)
class RunRef:
    key: str  # in URLs
    path: Path  # the folder as found (a run directory or a foreign trace)
    framework: str  # cambrian | shinkaevolve | openevolve | evotrace

    @property
    def imported(self) -> bool:
        return self.framework != "cambrian"

    @property
    def name(self) -> str:
        return self.path.name


def default_cache_dir() -> Path:
    base = os.environ.get("CAMBRIAN_CACHE") or str(Path.home() / ".cache" / "cambrian")
    return Path(base) / "ui-imports"


def trace_format(path: Path) -> str | None:
    """The framework whose trace ``path`` holds, or None."""
    if (path / STORE_FILENAME).is_file():
        return "cambrian"
    from cambrian.trace.importers import UnknownTraceFormat, detect_format

    try:
        return detect_format(path)
    except (UnknownTraceFormat, FileNotFoundError, OSError):
        return None


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "run"


def _walk(root: Path, depth: int) -> Iterable[tuple[Path, str]]:
    found = trace_format(root)
    if found is not None:
        yield root, found
        return
    if depth <= 0:
        return
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return
    for child in children:
        if not child.name.startswith(".") and child.name not in _SKIP:
            yield from _walk(child, depth - 1)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _import(trace: Path, target: Path) -> None:
    """Import ``trace`` into a new store at ``target``, complete or not at all: a killed
    import is never taken for a finished one, and of two UI processes importing the same trace
    the first to finish wins."""
    from cambrian.trace.to_store import import_to_store

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)  # left by a killed process of the same pid
    try:
        import_to_store(trace, partial)
        try:
            partial.rename(target)
        except OSError:  # another process's import is already there
            pass
    finally:
        shutil.rmtree(partial, ignore_errors=True)


class RunCatalog:
    def __init__(self, roots: Iterable[Path], cache_dir: Path | None = None) -> None:
        self.roots = [Path(r).resolve() for r in roots]
        self.cache_dir = cache_dir or default_cache_dir()
        self._refs: dict[str, RunRef] = {}
        self._lock = threading.Lock()

    def refresh(self) -> list[RunRef]:
        found: dict[Path, str] = {}
        for root in self.roots:
            for path, framework in _walk(root, SEARCH_DEPTH):
                found.setdefault(path, framework)
        names: dict[str, int] = {}
        for path in found:
            names[_slug(path.name)] = names.get(_slug(path.name), 0) + 1
        refs: dict[str, RunRef] = {}
        for path, framework in sorted(found.items()):
            key = _slug(path.name)
            if names[key] > 1:
                key = f"{key}-{hashlib.sha1(str(path).encode()).hexdigest()[:6]}"
            refs[key] = RunRef(key, path, framework)
        with self._lock:
            self._refs = refs
        return list(refs.values())

    def get(self, key: str) -> RunRef:
        with self._lock:
            ref = self._refs.get(key)
        if ref is None:
            self.refresh()
            with self._lock:
                ref = self._refs.get(key)
        if ref is None:
            raise KeyError(key)
        return ref

    def store_dir(self, ref: RunRef) -> Path:
        """The folder holding the run store (the import's cache folder for a foreign trace).

        A trace is imported again when its files change; the new import replaces the older
        ones of the same path, so the cache keeps one import per trace."""
        if not ref.imported:
            return ref.path
        stamp = max((entry.stat().st_mtime for entry in os.scandir(ref.path)), default=0.0)
        prefix = f"{_slug(ref.name)}-{_digest(str(ref.path))}-"
        target = self.cache_dir / (prefix + _digest(repr(stamp)))
        with self._lock:  # one import at a time, never two of the same trace
            if not (target / STORE_FILENAME).exists():
                _import(ref.path, target)
                for older in self.cache_dir.glob(glob.escape(prefix) + "*"):
                    if older != target:
                        shutil.rmtree(older, ignore_errors=True)
        return target

    def open(self, ref: RunRef) -> Store:
        """The run's store, read-only (beside a running writer: WAL)."""
        return Store.open(self.store_dir(ref), read_only=True)
