"""run_sandboxed against real subprocesses: limits, process-group kills, output caps."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import tracemalloc
from pathlib import Path

import pytest

from cambrian.evaluate.sandbox import SandboxResult, run_sandboxed


async def run_python(
    code: str,
    cwd: Path,
    *,
    timeout_s: float = 60.0,
    memory_limit_mb: int | None = 1024,
    env: dict[str, str] | None = None,
    max_output_bytes: int = 64_000,
    cpu_time_limit_s: float | None = None,
) -> SandboxResult:
    script = cwd / "script.py"
    script.write_text(textwrap.dedent(code))
    return await run_sandboxed(
        [sys.executable, str(script)],
        cwd=cwd,
        env=env,
        timeout_s=timeout_s,
        memory_limit_mb=memory_limit_mb,
        max_output_bytes=max_output_bytes,
        cpu_time_limit_s=cpu_time_limit_s,
    )


def spawn_grandchild_then(marker: str, then: str) -> str:
    """The script (its path holds `marker`) starts a sleeping grandchild marked the same way."""
    return f"""
        import os, subprocess, sys, time
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)",
                                       {marker!r}])
        open("ready", "w").close()
        {then}
    """


async def test_captures_streams_exit_code_and_cwd(tmp_path: Path) -> None:
    result = await run_python(
        """
        import os, sys
        print("to stdout", os.getcwd())
        print("to stderr", file=sys.stderr)
        sys.exit(3)
        """,
        tmp_path,
    )
    assert result.returncode == 3
    assert result.stdout == f"to stdout {tmp_path}\n"
    assert result.stderr == "to stderr\n"
    assert result.signal_name is None
    assert not result.timed_out and not result.memory_exceeded
    assert result.duration_s > 0


async def test_numeric_threads_capped_unless_overridden(tmp_path: Path) -> None:
    code = """
        import os
        print(os.environ["OMP_NUM_THREADS"], os.environ["OPENBLAS_NUM_THREADS"],
              os.environ["MKL_NUM_THREADS"], os.environ.get("EXTRA_VAR"))
    """
    default = await run_python(code, tmp_path)
    overridden = await run_python(code, tmp_path, env={"OMP_NUM_THREADS": "4", "EXTRA_VAR": "x"})
    assert default.stdout.split() == ["1", "1", "1", "None"]
    assert overridden.stdout.split() == ["4", "1", "1", "x"]


async def test_inherited_credentials_are_withheld_unless_passed_explicitly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAMBRIAN_TEST_API_KEY", "sk-secret")
    monkeypatch.setenv("CAMBRIAN_TEST_TOKEN", "tok")
    monkeypatch.setenv("CAMBRIAN_TEST_TOKENIZERS_MODE", "not on the allow-list either")
    monkeypatch.setenv("LC_ALL", "C")
    code = """
        import os
        for suffix in ("API_KEY", "TOKEN", "TOKENIZERS_MODE"):
            print(os.environ.get("CAMBRIAN_TEST_" + suffix, "-"))
        print(os.environ.get("LC_ALL", "-"))
    """
    withheld = await run_python(code, tmp_path)
    passed = await run_python(code, tmp_path, env={"CAMBRIAN_TEST_API_KEY": "sk-secret"})
    # The environment is an allow-list: nothing else is inherited, whatever its name.
    assert withheld.stdout.split() == ["-", "-", "-", "C"]
    assert passed.stdout.split() == ["sk-secret", "-", "-", "C"]


async def test_wall_clock_timeout_kills_the_whole_group(tmp_path: Path, probe) -> None:
    marker = str(tmp_path)
    result = await run_python(
        spawn_grandchild_then(marker, "time.sleep(10_000)"), tmp_path, timeout_s=4
    )
    assert result.timed_out
    assert result.signal_name == "SIGKILL"
    assert not result.memory_exceeded
    assert result.duration_s < 30
    assert (tmp_path / "ready").exists()
    assert probe.marked_running_after(marker) == []


async def test_grandchild_left_behind_by_a_clean_exit_is_killed(tmp_path: Path, probe) -> None:
    marker = str(tmp_path)
    # The grandchild inherits the pipes; the call must neither wait for it nor leave it.
    result = await run_python(spawn_grandchild_then(marker, "print('done')"), tmp_path)
    assert result.returncode == 0
    assert result.stdout == "done\n"
    assert not result.timed_out
    assert result.duration_s < 30
    assert (tmp_path / "ready").exists()
    assert probe.marked_running_after(marker) == []


async def test_cancelling_the_awaiting_task_kills_the_group(tmp_path: Path, probe) -> None:
    marker = str(tmp_path)
    task = asyncio.create_task(
        run_python(spawn_grandchild_then(marker, "time.sleep(10_000)"), tmp_path, timeout_s=300)
    )
    for _ in range(600):
        if len(probe.pids_with_marker(marker)) >= 2:
            break
        await asyncio.sleep(0.05)
    assert len(probe.pids_with_marker(marker)) >= 2  # the script and its grandchild

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.marked_running_after(marker) == []


async def test_allocation_beyond_the_memory_limit_is_reported(tmp_path: Path) -> None:
    result = await run_python("blob = bytearray(2 * 1024**3)", tmp_path, memory_limit_mb=300)
    assert result.memory_exceeded
    assert not result.timed_out
    assert result.returncode == 1
    assert "MemoryError" in result.stderr


async def test_huge_output_keeps_head_and_tail_within_the_cap(tmp_path: Path) -> None:
    cap = 10_000
    tracemalloc.start()
    try:
        result = await run_python(
            """
            import sys
            sys.stdout.write("HEAD" + "x" * 20_000_000 + "TAIL")
            sys.stderr.write("e" * 1_000_000)
            """,
            tmp_path,
            max_output_bytes=cap,
        )
        _, peak_traced = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.returncode == 0
    assert result.stdout.startswith("HEAD") and result.stdout.endswith("TAIL")
    assert result.stdout_truncated_bytes == 20_000_008 - cap
    assert f"{result.stdout_truncated_bytes} bytes of stdout dropped" in result.stdout
    assert len(result.stdout) < cap + 200
    assert result.stderr_truncated_bytes == 1_000_000 - cap
    # 20 MB went through the parent; buffering it would show up here.
    assert peak_traced < 8 * 1024 * 1024


async def test_cpu_time_limit_stops_a_busy_loop(tmp_path: Path) -> None:
    result = await run_python("while True: pass", tmp_path, timeout_s=60, cpu_time_limit_s=1)
    assert result.timed_out
    assert result.cpu_time_exceeded
    assert result.signal_name in ("SIGXCPU", "SIGKILL")
    assert result.duration_s < 50


async def test_segfault_far_below_the_limit_is_a_crash_not_memory(tmp_path: Path) -> None:
    result = await run_python("import ctypes; ctypes.string_at(0)", tmp_path)
    assert result.signal_name == "SIGSEGV"
    assert result.returncode < 0
    assert not result.memory_exceeded and not result.timed_out
    assert "Segmentation fault" in result.stderr  # faulthandler is on by default


async def test_a_small_process_killing_itself_is_a_crash_not_memory(tmp_path: Path) -> None:
    result = await run_python(
        "import os, signal, time\ntime.sleep(0.5)\nos.kill(os.getpid(), signal.SIGKILL)",
        tmp_path, memory_limit_mb=2048)
    assert result.signal_name == "SIGKILL"
    assert not result.memory_exceeded and not result.timed_out


async def test_missing_executable_is_a_127_exit_with_a_message(tmp_path: Path) -> None:
    result = await run_sandboxed(
        ["definitely-not-a-command-cambrian"],
        cwd=tmp_path,
        env=None,
        timeout_s=30,
        memory_limit_mb=None,
    )
    assert result.returncode == 127
    assert "cannot exec 'definitely-not-a-command-cambrian'" in result.stderr
