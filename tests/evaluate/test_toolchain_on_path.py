"""A toolchain on Cambrian's PATH installed where only its owner may go (cargo under
~/.cargo/bin, in a 0700 home) runs inside the sandbox as it does outside: the folders of PATH
the sandbox user cannot reach are exposed read-only, and rustup's or pyenv's home variable
keeps pointing at the real home's folder. The home folder itself is never exposed."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from cambrian.evaluate.child_env import build_child_env, toolchain_paths
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator
from cambrian.evaluate.sandbox import run_sandboxed

TOOL_EVALUATOR = """import subprocess


def evaluate(program_path):
    done = subprocess.run(["cambrian-test-tool"], capture_output=True, text=True)
    return {"combined_score": float(done.stdout.strip() == "tool ran"),
            "text_feedback": done.stdout + done.stderr}
"""


def private_tool(root: Path) -> Path:
    """``root/home/.tools/bin/cambrian-test-tool`` in a home only its owner may enter."""
    bin_dir = root / "home" / ".tools" / "bin"
    bin_dir.mkdir(parents=True)
    tool = bin_dir / "cambrian-test-tool"
    tool.write_text("#!/bin/sh\necho tool ran\n")
    tool.chmod(0o755)
    (root / "home").chmod(0o700)
    return bin_dir


def require_sandbox_user(containment: dict[str, bool | str], require_containment) -> None:
    require_containment("mount_namespace")
    if not containment.get("sandbox_user"):  # "uid N" when active
        pytest.skip(f"no sandbox user on this machine ({containment})")


async def test_a_tool_in_a_private_home_runs_inside_the_sandbox(
    tmp_path: Path, containment, require_containment
) -> None:
    require_sandbox_user(containment, require_containment)
    bin_dir = private_tool(tmp_path)
    task = tmp_path / "task"
    task.mkdir()
    (task / "evaluator.py").write_text(TOOL_EVALUATOR)
    evaluator = ProgramEvaluator(EvaluatorSettings(
        evaluator_path=task / "evaluator.py",
        env={"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}))
    result = await evaluator.evaluate("VALUE = 1\n", tmp_path / "work")
    assert result.status == "ok", result.error or result.stderr
    assert result.combined_score == 1.0, result.text_feedback


async def test_rustups_cargo_on_path_runs_inside_the_sandbox(
    tmp_path: Path, containment, require_containment
) -> None:
    require_sandbox_user(containment, require_containment)
    cargo = shutil.which("cargo")
    if cargo is None or not Path(os.environ.get("HOME", "/"), ".rustup").is_dir():
        pytest.skip("no rustup-installed cargo on PATH")
    result = await run_sandboxed(
        ["sh", "-c", "cargo --version && rustc --version"], cwd=tmp_path / "s", env=None,
        timeout_s=60, memory_limit_mb=None, scratch_dir=tmp_path / "s")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("cargo "), result.stdout


def test_only_folders_the_sandbox_user_cannot_reach_are_named_never_the_home(
    tmp_path: Path,
) -> None:
    bin_dir = private_tool(tmp_path)
    home = tmp_path / "home"
    env = {"PATH": os.pathsep.join([str(bin_dir), str(home), str(tmp_path), "/usr/bin", "/",
                                    "relative/bin", str(tmp_path / "missing")])}
    assert toolchain_paths(env, home=str(home)) == [str(bin_dir)]


def test_a_toolchain_home_under_the_real_home_is_kept(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".rustup").mkdir(parents=True)
    env = build_child_env(None, scratch_dir=tmp_path / "s",
                          inherited={"HOME": str(home), "PATH": "/usr/bin"})
    assert env["RUSTUP_HOME"] == str(home / ".rustup") and "PYENV_ROOT" not in env
    assert env["HOME"] == str(tmp_path / "s")
    given = build_child_env(None, scratch_dir=tmp_path / "s", inherited={
        "HOME": str(home), "RUSTUP_HOME": "/opt/rustup", "PYENV_ROOT": "/opt/pyenv"})
    assert given["RUSTUP_HOME"] == "/opt/rustup" and given["PYENV_ROOT"] == "/opt/pyenv"
    assert sys.executable  # the sandbox's own interpreter stays reachable (exposed_paths)


def test_a_path_folder_created_after_an_evaluation_is_found_at_the_next(tmp_path: Path) -> None:
    """What a folder resolves to is kept for the next evaluations, but a folder missing at the
    first one is looked for again (a toolchain installed during the run is exposed)."""
    home = tmp_path / "home"
    late = tmp_path / "late" / "bin"
    env = {"PATH": os.pathsep.join([str(late), "/usr/bin"])}
    assert toolchain_paths(env, home=str(home)) == []
    late.mkdir(parents=True)
    (tmp_path / "late").chmod(0o700)
    assert toolchain_paths(env, home=str(home)) == [str(late)]
    assert toolchain_paths(env, home=str(home)) == [str(late)]  # from what was kept
