"""What the hostile cases (benchmarks/hostile.py) share: the `cambrian` command, its quiet
settings, the run's secret and the case records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

CLI = [sys.executable, "-m", "cambrian"]
SECRET = "sk-hostile-0123456789abcdefXYZ"
QUIET = ["novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
         "evaluation.timeout_s=8", "evaluation.memory_limit_mb=1024",
         "evolution.patch_types=[full]", "evolution.patch_type_probs=[1.0]",
         "mutation.schedule=off"]


@dataclass
class Outcome:
    name: str
    handled: bool
    detail: str


@dataclass
class Case:
    name: str
    run: Callable[[Path], tuple[bool, str]]


def cambrian(*args: str, env: dict[str, str] | None = None,
             timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=ROOT)


def settings(model: dict[str, Any], *more: str) -> list[str]:
    flat = ["--set", "llm.models=[" + json.dumps(model) + "]"]
    for item in (*QUIET, *more):
        flat += ["--set", item]
    return flat


def clean(result: subprocess.CompletedProcess[str]) -> bool:
    return "Traceback" not in result.stdout + result.stderr


def processes_with(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in command:
                found.append(f"{proc.name}: {command.strip()}")
    return found
