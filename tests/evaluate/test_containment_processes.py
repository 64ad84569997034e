"""Hostile candidates against processes: setsid escapes, signals to Cambrian, a killed Cambrian,
fork bombs, and the CPU limit an orphan would still meet."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from cambrian.evaluate.containment import ContainmentPolicy, default_cpu_time_limit
from cambrian.evaluate.runner import EvaluatorSettings
from cambrian.evaluate.sandbox import run_sandboxed

EVALUATOR = """
import importlib.util

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return {"combined_score": 1.0}
"""

# Stands in for Cambrian: runs one sandboxed command, prints how it ended.
STAND_IN = """
import asyncio, json, sys
from pathlib import Path
from cambrian.evaluate.sandbox import run_sandboxed

async def main():
    scratch, code, timeout_s = Path(sys.argv[1]), Path(sys.argv[2]).read_text(), float(sys.argv[3])
    result = await run_sandboxed([sys.executable, "-c", code], cwd=scratch, env=None,
                                 timeout_s=timeout_s, memory_limit_mb=1024, scratch_dir=scratch)
    print(json.dumps({"returncode": result.returncode, "signal": result.signal_name,
                      "stdout": result.stdout, "stderr": result.stderr}))

asyncio.run(main())
"""


def start_stand_in(tmp_path: Path, code: str, timeout_s: float = 120) -> subprocess.Popen[str]:
    (tmp_path / "stand_in.py").write_text(STAND_IN)
    (tmp_path / "candidate.py").write_text(textwrap.dedent(code))
    return subprocess.Popen(
        [sys.executable, str(tmp_path / "stand_in.py"), str(tmp_path / "scratch"),
         str(tmp_path / "candidate.py"), str(timeout_s)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def finished_stand_in(tmp_path: Path, code: str) -> tuple[int, dict[str, object]]:
    stand_in = start_stand_in(tmp_path, code)
    stdout, stderr = stand_in.communicate(timeout=180)
    lines = stdout.strip().splitlines()
    return stand_in.returncode, (json.loads(lines[-1]) if lines else {"stand_in_stderr": stderr})


def sleeper(marker: str, *, new_session: bool) -> str:
    return (f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', "
            f"{marker!r}], start_new_session={new_session})")


async def test_setsid_grandchild_does_not_outlive_the_evaluation(
    make_evaluator, write_file: Callable[[str, str], Path], work_dir: Path, tmp_path: Path, probe,
    require_containment,
) -> None:
    require_containment("pid_namespace")
    marker = f"cambrian-setsid-{tmp_path.name}"
    program = f"""
import os, subprocess, sys
{sleeper(marker, new_session=True)}
if os.fork() == 0:  # a daemon: double fork, own session, parent gone
    os.setsid()
    {sleeper(marker, new_session=False)}
    os._exit(0)
open("ready", "w").close()
"""
    evaluator = make_evaluator(EvaluatorSettings(evaluator_path=write_file("ev.py", EVALUATOR)))
    started = time.monotonic()
    result = await evaluator.evaluate(program, work_dir)
    assert result.status == "ok", result.error
    assert time.monotonic() - started < 30
    assert (work_dir / "ready").exists()
    assert probe.marked_running_after(marker, within_s=5) == []


def test_killing_the_parent_cannot_reach_cambrian(tmp_path: Path, require_containment) -> None:
    require_containment("cambrian_unsignalable")
    code = """
import os, signal
parent = os.getppid()
try:
    os.kill(parent, signal.SIGKILL)
    print("sent to", parent)
except OSError as error:
    print("refused", error.errno)
print("still here")
"""
    exit_code, result = finished_stand_in(tmp_path, code)
    assert exit_code == 0, result  # the stand-in for Cambrian survived and reported
    # The candidate's parent is its namespace's init, which ignores the signal.
    assert result["returncode"] == 0 and "still here" in result["stdout"], result


def test_killing_its_own_process_group_ends_only_the_evaluation(tmp_path: Path) -> None:
    code = """
import os, signal
print("about to", flush=True)
os.killpg(0, signal.SIGKILL)
print("unreachable")
"""
    exit_code, result = finished_stand_in(tmp_path, code)
    assert exit_code == 0, result
    assert result["signal"] == "SIGKILL" and "unreachable" not in result["stdout"], result


def test_killing_every_process_it_can_reaches_only_the_sandbox(
    tmp_path: Path, require_containment
) -> None:
    require_containment("pid_namespace")
    code = """
import os, signal
print("about to", flush=True)
os.kill(-1, signal.SIGKILL)
print("after")
"""
    exit_code, result = finished_stand_in(tmp_path, code)
    assert exit_code == 0, result
    assert "about to" in result["stdout"], result


def test_a_killed_cambrian_takes_the_evaluation_along(
    tmp_path: Path, probe, require_containment
) -> None:
    require_containment("parent_death_signal")
    marker = f"cambrian-orphan-{tmp_path.name}"
    code = f"""
import subprocess, sys, time
# {marker}
{sleeper(marker, new_session=True)}
time.sleep(1000)
"""
    stand_in = start_stand_in(tmp_path, code, timeout_s=600)
    try:
        deadline = time.monotonic() + 60
        while len(probe.pids_with_marker(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(probe.pids_with_marker(marker)) >= 2  # the candidate and its grandchild
        os.kill(stand_in.pid, signal.SIGKILL)  # Cambrian dies mid-evaluation
        stand_in.wait(timeout=30)
        assert probe.marked_running_after(marker, within_s=5) == []
    finally:
        if stand_in.poll() is None:
            stand_in.kill()
            stand_in.wait()


async def test_fork_bomb_meets_the_process_limit(
    tmp_path: Path, probe, require_containment
) -> None:
    require_containment("rlimit_nproc", "pid_namespace")
    scratch = tmp_path / "scratch"
    marker = f"cambrian-forks-{tmp_path.name}"
    code = f"""
import os, time
# {marker}
forks = 0
try:
    while forks < 10_000:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        forks += 1
except OSError as error:
    print("STOPPED", forks, error.errno, flush=True)
"""
    result = await run_sandboxed(
        [sys.executable, "-c", code], cwd=scratch, env=None, timeout_s=60,
        memory_limit_mb=1024, scratch_dir=scratch,
        containment=ContainmentPolicy(max_processes=40),
    )
    verdict, forks, error_number = result.stdout.split()
    assert verdict == "STOPPED" and int(forks) < 40, result
    assert int(error_number) == 11  # EAGAIN: RLIMIT_NPROC
    assert probe.marked_running_after(marker, within_s=5) == []


async def test_cpu_limit_is_set_even_when_the_config_gives_none(tmp_path: Path) -> None:
    code = "import resource; print(*resource.getrlimit(resource.RLIMIT_CPU))"
    result = await run_sandboxed(
        [sys.executable, "-c", code], cwd=tmp_path, env=None, timeout_s=20, memory_limit_mb=None,
    )
    soft, hard = (int(value) for value in result.stdout.split())
    assert soft != resource.RLIM_INFINITY and soft == default_cpu_time_limit(20)
    assert hard == soft + 1
    assert result.cpu_time_limit_s == default_cpu_time_limit(20)
