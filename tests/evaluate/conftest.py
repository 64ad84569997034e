"""Fixtures for evaluation tests: write tiny task files, probe whether processes still run."""

from __future__ import annotations

import dataclasses
import os
import textwrap
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

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

    def pids_with_marker(self, marker: str) -> list[int]:
        """Running processes whose command line holds `marker`, seen from this PID namespace.

        Sandboxed processes live in their own PID namespace, where the pids they see are not
        ours; a marker in their command line finds them from outside.
        """
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline and self.is_running(int(name)):
                found.append(int(name))
        return found

    def marked_running_after(self, marker: str, within_s: float = 10.0) -> list[int]:
        """Pids with `marker` still running once `within_s` has passed (early when none)."""
        deadline = time.monotonic() + within_s
        alive = self.pids_with_marker(marker)
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = self.pids_with_marker(marker)
        return alive


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


@pytest.fixture(scope="session")
def containment() -> dict[str, bool | str]:
    """What the sandbox can contain on this machine (one probe command per test session)."""
    from cambrian.evaluate.containment import containment_report

    return containment_report()


@pytest.fixture
def require_containment(
    containment: dict[str, bool | str],
) -> Callable[..., None]:
    """require_containment("pid_namespace", ...) skips the test, giving the report as the
    reason, unless every named mechanism is active on this machine."""

    def require(*mechanisms: str) -> None:
        missing = [name for name in mechanisms if containment.get(name) is not True]
        if missing:
            pytest.skip(f"containment mechanism(s) {', '.join(missing)} inactive on this "
                        f"machine (containment report: {containment})")

    return require


@pytest.fixture(params=[False, True], ids=["cold", "warm"])
def make_evaluator(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """make_evaluator(settings) -> a ProgramEvaluator that starts a fresh interpreter per
    evaluation (cold) or forks it from its warm worker (warm); the same guarantees hold."""
    from cambrian.evaluate.runner import ProgramEvaluator

    made: list[Any] = []

    def make(settings: Any) -> Any:
        evaluator = ProgramEvaluator(dataclasses.replace(settings, warm_worker=request.param))
        made.append(evaluator)
        return evaluator

    yield make
    for evaluator in made:
        if evaluator.warm is not None:
            # A warm test must not pass by falling back to cold evaluations.
            assert evaluator.warm.disabled is None, evaluator.warm.disabled
            assert evaluator.warm.started, "the warm worker never ran an evaluation"
            evaluator.warm._stop()
