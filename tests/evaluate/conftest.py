"""Fixtures for evaluation tests: write tiny task files, probe whether processes still run."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest


class ProcessProbe:
    @staticmethod
    def is_running(pid: int) -> bool:
        """True while the process exists and is not a zombie (PID 1 here may never reap)."""
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return False
        return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")

    def still_running_after(self, pids: Iterable[int], within_s: float = 10.0) -> list[int]:
        """Pids still running once `within_s` has passed (returns early when all are gone)."""
        deadline = time.monotonic() + within_s
        alive = [pid for pid in pids if self.is_running(pid)]
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = [pid for pid in alive if self.is_running(pid)]
        return alive

    @staticmethod
    def read_pids(path: Path) -> list[int]:
        return [int(token) for token in path.read_text().split()]


@pytest.fixture
def probe() -> ProcessProbe:
    return ProcessProbe()


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "task"
    folder.mkdir()
    return folder


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    return tmp_path / "work"


@pytest.fixture
def write_file(task_dir: Path) -> Callable[[str, str], Path]:
    """write_file("evaluator.py", code) -> path of the dedented file in the task folder."""

    def write(name: str, code: str) -> Path:
        path = task_dir / name
        path.write_text(textwrap.dedent(code).lstrip("\n"))
        return path

    return write
