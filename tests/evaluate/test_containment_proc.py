"""The evaluation's own /proc: its processes may name their threads (CUDA's driver does, and
fails to start when it cannot), while the machine-wide parts stay read-only."""

from __future__ import annotations

import errno
import json
import sys
from pathlib import Path

import pytest

from cambrian.evaluate.containment import ContainmentPolicy
from cambrian.evaluate.sandbox import run_sandboxed

PROBE = r"""
import errno, json, threading

def attempt(path, text):
    try:
        with open(path, "w") as handle:
            handle.write(text)
        return "written"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))

outcome = {}
def worker():
    outcome["thread_name"] = attempt(
        "/proc/self/task/%d/comm" % threading.get_native_id(), "cuda-worker")
thread = threading.Thread(target=worker)
thread.start()
thread.join()
hostname = open("/proc/sys/kernel/hostname").read().strip()
outcome["sysctl"] = attempt("/proc/sys/kernel/hostname", hostname)  # the same value: harmless
outcome["sysrq"] = attempt("/proc/sysrq-trigger", "")
print("OUTCOME " + json.dumps(outcome))
"""


@pytest.mark.parametrize("drop_privileges", [True, False], ids=["sandbox-user", "root-no-caps"])
async def test_threads_can_be_named_but_kernel_settings_stay_read_only(
        tmp_path: Path, require_containment, drop_privileges: bool) -> None:
    require_containment("pid_namespace", "mount_namespace", "read_only_outside_scratch")
    scratch = tmp_path / "scratch"
    result = await run_sandboxed(
        [sys.executable, "-c", PROBE], cwd=scratch, env=None, timeout_s=30,
        memory_limit_mb=None, scratch_dir=scratch,
        containment=ContainmentPolicy(drop_privileges=drop_privileges))
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("OUTCOME "))
    outcome = json.loads(line.removeprefix("OUTCOME "))
    assert outcome["thread_name"] == "written"
    refused = {errno.errorcode[code] for code in (errno.EROFS, errno.EACCES, errno.EPERM)}
    assert outcome["sysctl"] in refused, outcome
    assert outcome["sysrq"] in refused | {"ENOENT"}, outcome  # some kernels have none


def test_mount_points_with_escaped_characters_are_read_back() -> None:
    """/proc/self/mountinfo escapes space, tab, newline and backslash as octal."""
    from cambrian.evaluate import linux_ns

    assert linux_ns._unescape("/plain/path") == "/plain/path"
    assert linux_ns._unescape("/with\\040space\\134back") == "/with space\\back"
