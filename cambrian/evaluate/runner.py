"""Evaluate one candidate program's source with a task's evaluator, under sandbox limits."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cambrian.evaluate.contracts import (
    ContractName,
    SandboxLimits,
    detect_contract,
    run_command_contract,
    run_module_contract,
)
from cambrian.evaluate.result import EvaluationResult

RESULTS_DIRNAME = "results"


@dataclass
class EvaluatorSettings:
    evaluator_path: Path
    contract: Literal["auto", "module", "command"] = "auto"
    timeout_s: float = 60.0
    memory_limit_mb: int | None = 4096
    cpu_time_limit_s: float | None = None
    max_output_bytes: int = 64_000
    python: str = sys.executable
    program_filename: str = "program.py"
    # Passed to command-contract evaluators as `--key value`.
    extra_args: dict[str, str] = field(default_factory=dict)
    # Added to the inherited environment (and the sandbox's thread caps); these win.
    env: dict[str, str] = field(default_factory=dict)
    # The evaluator's working directory; None means the evaluator's own folder
    # (the task folder), so evaluators that open sibling data files work.
    cwd: Path | None = None


class ProgramEvaluator:
    def __init__(self, settings: EvaluatorSettings) -> None:
        self.settings = settings
        self.evaluator_path = Path(settings.evaluator_path).resolve()
        if not self.evaluator_path.is_file():
            raise FileNotFoundError(f"evaluator not found: {self.evaluator_path}")
        if Path(settings.program_filename).name != settings.program_filename:
            raise ValueError(
                f"program_filename must be a bare file name, got {settings.program_filename!r}"
            )
        self.contract: ContractName = self._resolve_contract(settings.contract)
        self.cwd = Path(settings.cwd).resolve() if settings.cwd else self.evaluator_path.parent
        self.limits = SandboxLimits(
            timeout_s=settings.timeout_s,
            memory_limit_mb=settings.memory_limit_mb,
            cpu_time_limit_s=settings.cpu_time_limit_s,
            max_output_bytes=settings.max_output_bytes,
            env=dict(settings.env),
        )

    def _resolve_contract(self, contract: str) -> ContractName:
        if contract == "auto":
            return detect_contract(self.evaluator_path)
        if contract in ("module", "command"):
            return contract  # type: ignore[return-value]
        raise ValueError(f"contract must be 'auto', 'module' or 'command', got {contract!r}")

    async def evaluate(self, source: str, work_dir: Path) -> EvaluationResult:
        """Writes `source` into work_dir, runs the evaluator on it and returns its verdict.

        work_dir/<RESULTS_DIRNAME> is recreated empty, so stale results of an
        earlier run in the same folder can never be read back as this run's.
        """
        work_dir = Path(work_dir).resolve()
        work_dir.mkdir(parents=True, exist_ok=True)
        program_path = work_dir / self.settings.program_filename
        program_path.write_text(source, encoding="utf-8")
        results_dir = work_dir / RESULTS_DIRNAME
        if results_dir.exists():
            shutil.rmtree(results_dir)
        results_dir.mkdir()
        if self.contract == "module":
            return await run_module_contract(
                evaluator_path=self.evaluator_path,
                program_path=program_path,
                results_dir=results_dir,
                cwd=self.cwd,
                python=self.settings.python,
                limits=self.limits,
            )
        return await run_command_contract(
            evaluator_path=self.evaluator_path,
            program_path=program_path,
            results_dir=results_dir,
            cwd=self.cwd,
            python=self.settings.python,
            limits=self.limits,
            extra_args=self.settings.extra_args,
        )
