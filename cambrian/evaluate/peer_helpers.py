"""Helpers peers' evaluators import, provided when the evaluating interpreter lacks the peer.

A ShinkaEvolve ``evaluate.py`` does ``from shinka.core import run_shinka_eval``. When the
interpreter that runs it has no ``shinka`` package, the folder ``peer_path/`` (a small
``shinka`` package written for Cambrian, ``peer_path/shinka/core/wrap_eval.py``) is put at the
end of the evaluation's PYTHONPATH, so the folder runs unchanged and scores as under
ShinkaEvolve. An installed ShinkaEvolve is always used instead.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

PEER_PATH = Path(__file__).resolve().with_name("peer_path")
# Imports the evaluator's source must mention for the helpers to be considered.
PEER_PACKAGES = ("shinka",)
_FIND_SPEC = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)"


def _mentions(evaluator_path: Path, package: str) -> bool:
    try:
        text = evaluator_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return f"import {package}" in text or f"from {package}" in text


def interpreter_has(python: str, package: str) -> bool:
    """Whether ``python`` can import ``package`` (asked in-process for Cambrian's own)."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return importlib.util.find_spec(package) is not None
    try:
        return subprocess.run([python, "-c", _FIND_SPEC, package], capture_output=True,
                              timeout=30, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def with_peer_helpers(env: dict[str, str], evaluator_path: Path, python: str) -> dict[str, str]:
    """``env`` with PEER_PATH appended to PYTHONPATH when the evaluator needs a peer's helper
    module that ``python`` does not have."""
    needed = [package for package in PEER_PACKAGES
              if _mentions(evaluator_path, package) and not interpreter_has(python, package)]
    if not needed:
        return env
    current = env.get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    entries = [entry for entry in current.split(os.pathsep) if entry]
    return {**env, "PYTHONPATH": os.pathsep.join([*entries, str(PEER_PATH)])}


__all__ = ["PEER_PATH", "interpreter_has", "with_peer_helpers"]
