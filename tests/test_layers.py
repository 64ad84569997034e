"""The layering of docs/architecture.md holds: every import runs down a layer, no import
closes a cycle between the packages (or the modules of one package), and only the store
imports sqlite3. The contracts live in pyproject.toml ([tool.importlinter])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    checked = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 broken" in checked.stdout and "3 kept" in checked.stdout


def test_names_and_imports_are_clean():
    """No undefined or unused name, no syntax error, imports sorted (pyproject's ruff rules)."""
    ruff = Path(sys.executable).with_name("ruff")
    checked = subprocess.run([str(ruff), "check", "--no-cache", "cambrian", "tests",
                              "benchmarks"], cwd=ROOT, capture_output=True, text=True,
                             timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_declared_python_is_the_running_one():
    """pyproject says which Python Cambrian needs; the code uses what that version has
    (typing.Self, enum.StrEnum)."""
    import tomllib

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert declared == ">=3.11"
    assert sys.version_info >= (3, 11)
