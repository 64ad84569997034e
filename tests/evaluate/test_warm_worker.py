"""The warm worker: evaluations forked from a warm interpreter behave as cold ones and stay as
contained (the containment tests run both ways; these cover what only the warm path has)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator
from cambrian.evaluate.warm_worker import local_module_names, preload_names

# Reports what a fresh interpreter would show, then scores VALUE.
MODULE_EVALUATOR = """
import atexit, json, os, random, sys
import numpy

def evaluate(program_path):
    namespace = {}
    exec(open(program_path).read(), namespace)
    atexit.register(lambda: print("ATEXIT ran", flush=True))
    print("SEEN " + json.dumps({
        "random": random.random(), "numpy": float(numpy.random.random()),
        "home": os.environ["HOME"], "cwd": os.getcwd(), "path0": sys.path[0],
        "main": sys.modules["__main__"].__name__,
        "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
    }))
    return {"combined_score": float(namespace["VALUE"])}
"""

COMMAND_EVALUATOR = """
import argparse, json, sys
parser = argparse.ArgumentParser()
parser.add_argument("--program_path")
parser.add_argument("--results_dir")
args = parser.parse_args()
namespace = {}
exec(open(args.program_path).read(), namespace)
print("NAME", __name__, "ARGV0", sys.argv[0].rsplit("/", 1)[-1])
if namespace["VALUE"] < 0:
    sys.exit(3)
with open(args.results_dir + "/metrics.json", "w") as handle:
    json.dump({"combined_score": float(namespace["VALUE"])}, handle)
"""


def seen(stdout: str) -> dict[str, object]:
    line = next(line for line in stdout.splitlines() if line.startswith("SEEN "))
    return json.loads(line.removeprefix("SEEN "))


def evaluator(task_dir: Path, code: str, warm: bool, **settings: object) -> ProgramEvaluator:
    path = task_dir / "evaluate.py"
    path.write_text(textwrap.dedent(code).lstrip("\n"))
    return ProgramEvaluator(EvaluatorSettings(evaluator_path=path, warm_worker=warm,
                                              **settings))  # type: ignore[arg-type]


async def test_warm_and_cold_module_evaluations_agree(task_dir: Path, tmp_path: Path) -> None:
    results = {}
    for warm in (False, True):
        ev = evaluator(task_dir, MODULE_EVALUATOR, warm)
        first = await ev.evaluate("VALUE = 3\n", tmp_path / f"w{warm}a")
        second = await ev.evaluate("VALUE = 4\n", tmp_path / f"w{warm}b")
        results[warm] = (first, second)
        if warm:
            assert ev.warm is not None and ev.warm.started == 2 and "numpy" in ev.warm.loaded
        await ev.close()
    for warm, (first, second) in results.items():
        assert (first.status, first.combined_score, second.combined_score) == ("ok", 3.0, 4.0)
        a, b = seen(first.stdout), seen(second.stdout)
        assert "ATEXIT ran" in first.stdout, warm
        # A fresh random state each time, as a fresh interpreter has.
        assert a["random"] != b["random"] and a["numpy"] != b["numpy"], warm
        assert a["home"] == a["cwd"] == str((tmp_path / f"w{warm}a").resolve())
        assert a["path0"] == a["cwd"] and a["main"] == "__main__"
        # No descriptor beyond stdio: not the report pipe, not the server's socket.
        assert a["fds"][:3] == [0, 1, 2] and len(a["fds"]) <= 4, a["fds"]  # + the listing's own


async def test_warm_and_cold_command_evaluations_agree(task_dir: Path, tmp_path: Path) -> None:
    for warm in (False, True):
        ev = evaluator(task_dir, COMMAND_EVALUATOR, warm)
        good = await ev.evaluate("VALUE = 5\n", tmp_path / f"g{warm}")
        bad = await ev.evaluate("VALUE = -1\n", tmp_path / f"b{warm}")
        crash = await ev.evaluate("VALUE = 1 / 0\n", tmp_path / f"c{warm}")
        await ev.close()
        assert good.status == "ok" and good.combined_score == 5.0, good.error
        assert "NAME __main__ ARGV0 evaluate.py" in good.stdout
        assert bad.status == "crashed" and "exited with code 3" in bad.error
        assert crash.status == "crashed" and "ZeroDivisionError" in crash.error


async def test_the_task_folder_module_wins_over_an_installed_one(task_dir: Path,
                                                                 tmp_path: Path) -> None:
    (task_dir / "numpy.py").write_text("VALUE = 7\n")
    code = ("import numpy\n\ndef evaluate(program_path):\n"
            "    return {'combined_score': numpy.VALUE}\n")
    ev = evaluator(task_dir, code, True)
    assert ev.warm is not None and "numpy" not in ev.warm.preload
    result = await ev.evaluate("X = 1\n", tmp_path / "w")
    assert result.status == "ok" and result.combined_score == 7.0, result.error
    assert ev.warm.started == 1
    await ev.close()


async def test_a_task_module_shadowing_a_preloaded_one_turns_the_worker_off(
        task_dir: Path, tmp_path: Path) -> None:
    (task_dir / "inspect.py").write_text("VALUE = 7\n")  # module_runner imports inspect
    code = "def evaluate(program_path):\n    return {'combined_score': 1.0}\n"
    ev = evaluator(task_dir, code, True)
    result = await ev.evaluate("X = 1\n", tmp_path / "w")
    assert result.status == "ok", result.error
    assert ev.warm is not None and "inspect" in (ev.warm.disabled or "")
    await ev.close()


def test_preload_names_are_the_top_level_imports_outside_the_task_folder(tmp_path: Path) -> None:
    script = tmp_path / "evaluate.py"
    script.write_text(textwrap.dedent("""
        from __future__ import annotations
        import os, numpy.linalg
        from helpers import score
        from . import sibling
        try:
            import scipy
        except ImportError:
            scipy = None

        def evaluate(path):
            import pandas
    """))
    local = local_module_names(["evaluate.py", "helpers.py", "data/a.csv", "sub/x.py"], "",
                               "program")
    assert local == {"evaluate", "helpers", "data", "sub", "program"}
    assert preload_names([script], local) == ["os", "numpy.linalg", "scipy"]
    assert local_module_names(["task/ev.py", "task/lib/m.py", "other.py"], "task") == {"ev", "lib"}


async def test_a_dead_server_is_replaced_and_its_evaluation_run_again_cold(
        task_dir: Path, tmp_path: Path) -> None:
    code = ("import time\n\ndef evaluate(program_path):\n    time.sleep(float(open(program_path)"
            ".read()))\n    return {'combined_score': 1.0}\n")
    ev = evaluator(task_dir, code, True)
    assert (await ev.evaluate("0\n", tmp_path / "first")).status == "ok"
    assert ev.warm is not None and ev.warm._process is not None
    server = ev.warm._process.pid
    running = asyncio.ensure_future(ev.evaluate("1.5\n", tmp_path / "second"))
    await asyncio.sleep(0.5)
    os.kill(server, signal.SIGKILL)
    result = await running
    assert result.status == "ok", result.error  # evaluated again, cold
    third = await ev.evaluate("0\n", tmp_path / "third")
    assert third.status == "ok" and ev.warm.restarts == 1 and ev.warm.disabled is None
    assert ev.warm._process.pid != server
    await ev.close()


async def test_a_warm_evaluation_past_its_timeout_leaves_nothing_behind(
        task_dir: Path, tmp_path: Path, probe) -> None:
    marker = f"cambrian-warm-timeout-{tmp_path.name}"
    code = f"""
import subprocess, sys, time

def evaluate(program_path):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", {marker!r}],
                     start_new_session=True)
    time.sleep(1000)
"""
    ev = evaluator(task_dir, code, True, timeout_s=1.5)
    started = time.monotonic()
    result = await ev.evaluate("X = 1\n", tmp_path / "w")
    assert result.status == "timeout" and time.monotonic() - started < 20
    assert probe.marked_running_after(marker, within_s=5) == []
    assert ev.warm is not None and ev.warm.started == 1
    await ev.close()


# Stands in for Cambrian: a warm evaluator running one evaluation that sleeps.
STAND_IN = """
import asyncio, sys
from pathlib import Path
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

async def main():
    ev = ProgramEvaluator(EvaluatorSettings(evaluator_path=Path(sys.argv[1]), warm_worker=True))
    print("started", flush=True)
    await ev.evaluate(Path(sys.argv[2]).read_text(), Path(sys.argv[3]))

asyncio.run(main())
"""


def test_a_killed_cambrian_takes_the_server_and_its_evaluation_along(
        write_file: Callable[[str, str], Path], tmp_path: Path, probe) -> None:
    marker = f"cambrian-warm-orphan-{tmp_path.name}"
    evaluator_path = write_file("evaluate.py", """
        import importlib.util

        def evaluate(program_path):
            spec = importlib.util.spec_from_file_location("candidate", program_path)
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return {"combined_score": 1.0}
    """)
    (tmp_path / "candidate.py").write_text(
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', {marker!r}],"
        " start_new_session=True)\ntime.sleep(1000)\n")
    (tmp_path / "stand_in.py").write_text(STAND_IN)
    stand_in = subprocess.Popen(
        [sys.executable, str(tmp_path / "stand_in.py"), str(evaluator_path),
         str(tmp_path / "candidate.py"), str(tmp_path / "work")], stdout=subprocess.PIPE)
    server_tag = f'"parent_pid": {stand_in.pid},'
    try:
        deadline = time.monotonic() + 60
        while not probe.pids_with_marker(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert probe.pids_with_marker(marker)  # the candidate's grandchild runs
        assert probe.pids_with_marker(server_tag)  # and so does the warm server
        os.kill(stand_in.pid, signal.SIGKILL)  # Cambrian dies mid-evaluation
        stand_in.wait(timeout=30)
        assert probe.marked_running_after(marker, within_s=5) == []
        assert probe.marked_running_after(server_tag, within_s=5) == []
    finally:
        if stand_in.poll() is None:
            stand_in.kill()
            stand_in.wait()


NAMES_EVALUATOR = """
import os

def evaluate(program_path):
    def comm(pid):
        with open(f"/proc/{pid}/comm") as handle:
            return handle.read().strip()
    print("NAMES", comm("self"), comm(1), os.getpid(), flush=True)
    return {"combined_score": 1.0}
"""


def process_name(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as handle:
        return handle.read().strip()


async def test_the_sandbox_processes_are_named(task_dir: Path, tmp_path: Path,
                                               require_containment) -> None:
    """`ps`, `top` and `perf` tell the warm worker, the shim, its init and the command apart."""
    require_containment("pid_namespace")
    ev = evaluator(task_dir, NAMES_EVALUATOR, True)
    try:
        result = await ev.evaluate("VALUE = 1\n", tmp_path / "w")
        assert result.status == "ok", result.error
        assert ev.warm is not None and ev.warm._process is not None
        assert process_name(ev.warm._process.pid) == "cambrian-warm"
    finally:
        await ev.close()
    line = next(line for line in result.stdout.splitlines() if line.startswith("NAMES "))
    _, command, init, pid = line.split()
    # The command runs in its own PID namespace, under the init that reaps it (PID 1).
    assert (command, init) == ("cambrian-eval", "cambrian-init") and pid != "1"
    # Cold, the command execs a fresh interpreter, which takes its program's name.
    cold = evaluator(task_dir, NAMES_EVALUATOR, False)
    result = await cold.evaluate("VALUE = 1\n", tmp_path / "c")
    await cold.close()
    line = next(line for line in result.stdout.splitlines() if line.startswith("NAMES "))
    _, command, init, _ = line.split()
    assert command.startswith("python") and init == "cambrian-init"
