"""A machine that lacks a containment mechanism: the evaluation still runs, with what the kernel
offers, and the missing mechanism is a logged warning, never a failure. The real shim, with the
kernel's refusals simulated by a wrapper that makes `unshare` and no_new_privs fail."""

from __future__ import annotations

import logging
import sys
import textwrap
from pathlib import Path

import pytest

from cambrian.evaluate import containment
from cambrian.evaluate.sandbox import run_sandboxed

REFUSING_SHIM = """
import errno, importlib.util, sys
spec = importlib.util.spec_from_file_location("limits_exec", {real!r})
shim = importlib.util.module_from_spec(spec)
spec.loader.exec_module(shim)

def refused(*args, **kwargs):
    raise OSError(errno.EPERM, "refused by this kernel (simulated)")

shim.ns.unshare = refused
shim.ns.set_no_new_privileges = refused
sys.exit(shim.main(sys.argv[1:]))
"""


async def test_an_evaluation_runs_without_namespaces_and_says_what_is_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    wrapper = tmp_path / "refusing_shim.py"
    wrapper.write_text(REFUSING_SHIM.format(real=str(containment.LIMITS_EXEC_PATH)))
    monkeypatch.setattr(containment, "LIMITS_EXEC_PATH", wrapper)
    monkeypatch.setattr(containment, "_warned", set())
    scratch = tmp_path / "scratch"
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import os, resource
        print("pid", os.getpid(), "cpu limit", resource.getrlimit(resource.RLIMIT_CPU)[0])
    """))
    caplog.set_level(logging.WARNING)
    result = await run_sandboxed([sys.executable, str(script)], cwd=tmp_path, env=None,
                                 timeout_s=30, memory_limit_mb=None, scratch_dir=scratch)

    assert result.returncode == 0, result.stderr
    pid, cpu_limit = result.stdout.split()[1], int(result.stdout.split()[-1])
    assert pid != "1"  # no PID namespace: the command is not its init's child
    assert 0 < cpu_limit < 10**6  # the limits still hold without namespaces
    warned = caplog.text
    assert "no namespace available" in warned and "refused by this kernel" in warned
    assert "no pid namespace" in warned
    assert "no_new_privs failed" in warned
