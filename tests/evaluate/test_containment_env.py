"""What reaches a candidate: not the run's API key (whatever its variable's name), not the
network when isolated."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from cambrian.evaluate.child_env import build_child_env, register_secret_values
from cambrian.evaluate.containment import ContainmentPolicy, containment_report
from cambrian.evaluate.runner import EvaluatorSettings
from cambrian.evaluate.sandbox import run_sandboxed

EVALUATOR = """
import importlib.util

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return {"combined_score": 1.0}
"""

# Looks for the secret in its own environment and in every /proc/*/environ it can read.
SNOOP = """
import json, os
secret = {secret!r}
own = sorted(name for name, value in os.environ.items() if secret in value)
readable, leaking = 0, []
for pid in [entry for entry in os.listdir("/proc") if entry.isdigit()]:
    try:
        environ = open(f"/proc/{{pid}}/environ", "rb").read()
    except OSError:
        continue
    readable += 1
    if secret.encode() in environ:
        leaking.append(pid)
print("SNOOP " + json.dumps({{"own": own, "llm_key": os.environ.get("LLM_KEY"),
                             "procs_leaking": leaking, "readable": readable}}))
"""


def snooped(stdout: str) -> dict[str, object]:
    line = next(line for line in stdout.splitlines() if line.startswith("SNOOP "))
    return json.loads(line.removeprefix("SNOOP "))


async def test_an_unusually_named_api_key_does_not_reach_the_candidate(
    make_evaluator, write_file: Callable[[str, str], Path], work_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    require_containment,
) -> None:
    require_containment("environment_allow_list")
    secret = f"sk-live-{uuid.uuid4().hex}"
    monkeypatch.setenv("LLM_KEY", secret)
    monkeypatch.setenv("DEEPSEEK_KEY", secret)
    evaluator = make_evaluator(EvaluatorSettings(evaluator_path=write_file("ev.py", EVALUATOR)))
    result = await evaluator.evaluate(SNOOP.format(secret=secret), work_dir)
    assert result.status == "ok", result.error
    seen = snooped(result.stdout)
    assert seen["llm_key"] is None and seen["own"] == []
    if containment_report()["cambrian_unsignalable"] is True:
        # Its PID namespace shows no process whose environment holds the key.
        assert seen["procs_leaking"] == []


async def test_secret_values_are_withheld_even_when_passed_explicitly(
    make_evaluator, write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    secret = f"sk-config-{uuid.uuid4().hex}"
    settings = EvaluatorSettings(
        evaluator_path=write_file("ev.py", EVALUATOR),
        env={"HELPER_URL": f"https://x.example/?key={secret}", "HARMLESS": "kept"},
        secret_values=frozenset({secret}),
    )
    code = SNOOP.format(secret=secret) + "import os\nprint('HARMLESS', os.environ['HARMLESS'])\n"
    result = await make_evaluator(settings).evaluate(code, work_dir)
    assert result.status == "ok", result.error
    assert snooped(result.stdout)["own"] == []
    assert "HARMLESS kept" in result.stdout


async def test_registered_secret_values_are_withheld_from_every_sandboxed_command(
    tmp_path: Path,
) -> None:
    secret = f"sk-registered-{uuid.uuid4().hex}"
    register_secret_values([secret, None, ""])
    code = "import os; print(sorted(k for k, v in os.environ.items() if 'sk-registered' in v))"
    result = await run_sandboxed(
        [sys.executable, "-c", code], cwd=tmp_path, env={"PASSED_BY_MISTAKE": secret},
        timeout_s=30, memory_limit_mb=None,
    )
    assert result.stdout.strip() == "[]"


def test_child_env_is_an_allow_list_with_home_and_tmpdir_in_the_scratch_folder(
    tmp_path: Path,
) -> None:
    inherited = {"PATH": "/usr/bin", "LC_ALL": "C", "HOME": "/root", "LLM_KEY": "sk-abcdef",
                 "PYTHONPATH": "/opt/lib", "AWS_SESSION": "x", "TMPDIR": "/tmp"}
    env = build_child_env({"EXTRA": "1"}, scratch_dir=tmp_path, inherited=inherited)
    assert env["HOME"] == str(tmp_path) and env["TMPDIR"].startswith(str(tmp_path))
    assert {"PATH", "LC_ALL", "PYTHONPATH", "EXTRA", "OMP_NUM_THREADS"} <= set(env)
    assert "LLM_KEY" not in env and "AWS_SESSION" not in env


def test_containment_report_names_every_mechanism() -> None:
    report = containment_report()
    for key in ("pid_namespace", "mount_namespace", "read_only_outside_scratch",
                "network_namespace", "sandbox_user", "parent_death_signal", "rlimit_cpu",
                "rlimit_nproc", "rlimit_fsize", "rlimit_core", "environment_allow_list",
                "cambrian_unsignalable", "descendants_killed"):
        assert key in report
    assert all(isinstance(value, (bool, str)) for value in report.values())
    # Whatever else the machine lacks, these need nothing but setrlimit.
    assert report["rlimit_cpu"] is True and report["rlimit_core"] is True


async def test_isolated_network_leaves_only_loopback(tmp_path: Path, require_containment) -> None:
    require_containment("network_namespace")
    code = """
import socket
server = socket.create_server(("127.0.0.1", 0))
socket.create_connection(server.getsockname(), timeout=5).close()
print("loopback ok")
try:
    socket.create_connection(("192.0.2.1", 80), timeout=5)
    print("outside reachable")
except OSError as error:
    print("outside unreachable", error.errno)
"""
    result = await run_sandboxed(
        [sys.executable, "-c", code], cwd=tmp_path / "s", env=None, timeout_s=30,
        memory_limit_mb=None, scratch_dir=tmp_path / "s",
        containment=ContainmentPolicy(isolate_network=True),
    )
    assert "loopback ok" in result.stdout, result.stderr
    assert "outside unreachable 101" in result.stdout  # ENETUNREACH: no route at all


@pytest.mark.parametrize("isolated", [False, True])
async def test_evaluation_isolate_network_setting_cuts_the_task_off(
        tmp_path: Path, require_containment, isolated: bool) -> None:
    """`evaluation.isolate_network` from the run's config reaches the evaluator it builds."""
    require_containment("network_namespace")
    import socket

    from cambrian.config.loading import build_config
    from cambrian.evaluate.factory import build_evaluator
    from cambrian.store.store import Store
    from cambrian.task.folder import load_task

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (task_dir / "initial.py").write_text("# EVOLVE-BLOCK-START\nX = 1\n# EVOLVE-BLOCK-END\n")
    (task_dir / "evaluate.py").write_text(f"""
import socket

def evaluate(program_path):
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
        return {{"combined_score": 1.0}}
    except OSError:
        return {{"combined_score": 0.0}}
""")
    config = build_config([], [f"evaluation.isolate_network={str(isolated).lower()}"])
    store = Store.open(tmp_path / "run", create=True)
    try:
        evaluator = build_evaluator(load_task(task_dir, config), config, tmp_path / "run", store)
        result = await evaluator.evaluate("X = 1\n", tmp_path / "work")
    finally:
        store.close()
        listener.close()
    # The host's loopback is another namespace's: an isolated evaluation cannot reach it.
    assert result.combined_score == (0.0 if isolated else 1.0), result
