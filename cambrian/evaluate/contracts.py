"""The two evaluator contracts a task may follow, both run through the sandbox.

module  (OpenEvolve style): the evaluator file defines `evaluate(program_path)`
        returning a dict (or an object with .metrics/.artifacts); module_runner
        calls it inside the sandbox and writes the result as JSON.
command (ShinkaEvolve style): `python evaluate.py --program_path P --results_dir D`
        writes D/metrics.json and optionally D/correct.json.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cambrian.core.evaluation import EvaluationResult
from cambrian.evaluate.containment import ContainmentPolicy
from cambrian.evaluate.result_mapping import (
    OutputRejected,
    map_command_results,
    map_module_payload,
    read_json_object,
)
from cambrian.evaluate.sandbox import SandboxResult, WarmLauncher, run_sandboxed
from cambrian.task.contracts import CONTRACT_SHAPES_HELP, ContractName, detect_contract

__all__ = ["CONTRACT_SHAPES_HELP", "ContractName", "SandboxLimits", "detect_contract",
           "run_command_contract", "run_module_contract"]


MODULE_RUNNER_PATH = Path(__file__).with_name("module_runner.py")
MODULE_RESULT_FILENAME = "module_result.json"
STDERR_TAIL_CHARS = 2_000

@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float
    memory_limit_mb: int | None
    cpu_time_limit_s: float | None = None
    max_output_bytes: int = 64_000
    env: Mapping[str, str] = field(default_factory=dict)
    secret_values: frozenset[str] = frozenset()
    containment: ContainmentPolicy | None = None
    # A warm worker (warm_worker.py) that runs the evaluator's script without starting a fresh
    # interpreter, under the same containment; None: every evaluation starts cold.
    warm: WarmLauncher | None = None


# ------------------------------------------------------------ sandbox outcomes


def _stderr_tail(sandbox: SandboxResult) -> str:
    tail = sandbox.stderr[-STDERR_TAIL_CHARS:].strip()
    return f"\n--- stderr (last {STDERR_TAIL_CHARS} chars) ---\n{tail}" if tail else ""


def _how_it_ended(sandbox: SandboxResult) -> str:
    if sandbox.signal_name:
        return f"was killed by {sandbox.signal_name}"
    return f"exited with code {sandbox.returncode}"


def sandbox_failure(
    sandbox: SandboxResult, limits: SandboxLimits, who: str
) -> EvaluationResult | None:
    """The result for a run that timed out, ran out of memory or disk, or crashed; None if it
    exited 0."""
    if sandbox.disk_exceeded:
        written = (f" ({sandbox.disk_written_bytes / 2**20:.0f} MB when it was stopped)"
                   if sandbox.disk_written_bytes else "")
        reason = (f"{who} wrote more than the disk limit of {sandbox.disk_limit_mb} MB "
                  f"(evaluation.disk_limit_mb) into its scratch folder{written}; it was killed "
                  "and what it wrote removed")
        return EvaluationResult(status="disk", error=reason + _stderr_tail(sandbox))
    if sandbox.timed_out:
        if sandbox.cpu_time_exceeded:
            cpu_limit = limits.cpu_time_limit_s or sandbox.cpu_time_limit_s
            reason = f"{who} exceeded the CPU-time limit of {cpu_limit:g} s"
        else:
            reason = (
                f"{who} exceeded the wall-clock limit of {limits.timeout_s:g} s; "
                "its whole process group was killed"
            )
        return EvaluationResult(status="timeout", error=reason + _stderr_tail(sandbox))
    if sandbox.memory_exceeded:
        resident_mb = limits.containment.resident_limit_mb if limits.containment else None
        if limits.memory_limit_mb is not None:
            limit = f"the memory limit of {limits.memory_limit_mb} MB per process"
        elif resident_mb is not None:
            limit = f"the resident-memory limit of {resident_mb} MB of an evaluation holding a GPU"
        else:
            limit = "the available memory"
        reason = f"{who} ran out of memory ({limit}) and {_how_it_ended(sandbox)}"
        return EvaluationResult(status="memory", error=reason + _stderr_tail(sandbox))
    if sandbox.returncode != 0:
        reason = f"{who} {_how_it_ended(sandbox)}"
        return EvaluationResult(status="crashed", error=reason + _stderr_tail(sandbox))
    return None


def _with_run_record(
    result: EvaluationResult, sandbox: SandboxResult, limits: SandboxLimits
) -> EvaluationResult:
    """Stores the (capped) streams; a cap that dropped bytes is recorded with the counts."""
    result.stdout = sandbox.stdout
    result.stderr = sandbox.stderr
    result.duration_s = sandbox.duration_s
    for stream in ("stdout", "stderr"):
        dropped = getattr(sandbox, f"{stream}_truncated_bytes")
        if dropped:
            result.extra[f"{stream}_truncated_bytes"] = dropped
            result.extra["output_cap_bytes"] = limits.max_output_bytes
    return result


def _drop_links(results_dir: Path) -> None:
    """Removes links the evaluation left in or as its results folder before Cambrian reads it.

    Cambrian may run as root, and the results folder lies in the candidate's scratch folder:
    a ``metrics.json`` linking to a file the sandbox user cannot read must not get that file
    into the store, and a results folder replaced by a link to any folder of the machine must
    be neither read nor cleaned (unlinking the links *there*). Nothing of the evaluation runs
    any more when this is called (no descendant survives it), so what is checked stays true.
    """
    try:
        fd = os.open(results_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return
    except OSError:  # a link or a file in its place: removed (never followed), folder empty
        results_dir.unlink()
        results_dir.mkdir()
        return
    try:
        for entry in os.scandir(fd):
            if entry.is_symlink():
                os.unlink(entry.name, dir_fd=fd)
    finally:
        os.close(fd)


async def _run(argv: list[str], cwd: Path, limits: SandboxLimits) -> SandboxResult:
    """Runs in the scratch folder `cwd`, the only place the evaluation may write."""
    return await run_sandboxed(
        argv,
        cwd=cwd,
        env=limits.env,
        timeout_s=limits.timeout_s,
        memory_limit_mb=limits.memory_limit_mb,
        max_output_bytes=limits.max_output_bytes,
        cpu_time_limit_s=limits.cpu_time_limit_s,
        scratch_dir=cwd,
        secret_values=limits.secret_values,
        containment=limits.containment,
        warm=limits.warm,
    )


# ------------------------------------------------------------------ contracts


def _exception_error(where: str, trace: str, sandbox: SandboxResult) -> str:
    # module_runner prints the traceback last on stderr, so the tail normally
    # holds both what the evaluator printed and the traceback itself.
    error = f"{where} raised an exception{_stderr_tail(sandbox)}"
    last_line = trace.strip().splitlines()[-1] if trace.strip() else ""
    if last_line not in error:
        error += f"\n--- traceback ---\n{trace[-STDERR_TAIL_CHARS:].strip()}"
    return error


def _module_exception(out_path: Path) -> str | None:
    try:
        payload = read_json_object(out_path)
    except OutputRejected:
        return None
    trace = payload.get("exception")
    return trace if isinstance(trace, str) else None


async def run_module_contract(
    *,
    evaluator_path: Path,
    program_path: Path,
    results_dir: Path,
    cwd: Path,
    python: str,
    limits: SandboxLimits,
    cascade_thresholds: Sequence[float] | None = None,
) -> EvaluationResult:
    """``cascade_thresholds``: run OpenEvolve's cascade (evaluate_stage1/2/3) when the
    evaluator defines it; None: evaluate() only."""
    out_path = results_dir / MODULE_RESULT_FILENAME
    argv = [
        python,
        str(MODULE_RUNNER_PATH),
        "--evaluator", str(evaluator_path),
        "--program", str(program_path),
        "--out", str(out_path),
    ]  # fmt: skip
    if cascade_thresholds is not None:
        argv += ["--cascade-thresholds", json.dumps([float(t) for t in cascade_thresholds])]
    sandbox = await _run(argv, cwd, limits)
    _drop_links(results_dir)
    where = f"evaluate() of {evaluator_path.name}"
    failure = sandbox_failure(sandbox, limits, where)
    if failure is not None:
        trace = _module_exception(out_path)
        if failure.status == "crashed" and trace:
            failure.error = _exception_error(where, trace, sandbox)
        return _with_run_record(failure, sandbox, limits)
    try:
        payload = read_json_object(out_path)
    except OutputRejected as rejection:
        hint = " (did the evaluated program call os._exit()?)" if not out_path.exists() else ""
        result = EvaluationResult(status=rejection.status, error=rejection.message + hint)
        return _with_run_record(result, sandbox, limits)
    result = map_module_payload(payload, where)
    if result.extra.get("reported_invalid"):  # validity 0 and no error: the output says why
        result.error += _output_tail(sandbox)
    return _with_run_record(result, sandbox, limits)


def _output_tail(sandbox: SandboxResult) -> str:
    """What the evaluation printed last (a caught traceback, often), for an error message."""
    parts = [(name, text[-STDERR_TAIL_CHARS:].strip())
             for name, text in (("stdout", sandbox.stdout), ("stderr", sandbox.stderr))]
    return "".join(f"\n--- {name} (last {STDERR_TAIL_CHARS} chars) ---\n{text}"
                   for name, text in parts if text)


async def run_command_contract(
    *,
    evaluator_path: Path,
    program_path: Path,
    results_dir: Path,
    cwd: Path,
    python: str,
    limits: SandboxLimits,
    extra_args: Mapping[str, str] | None = None,
) -> EvaluationResult:
    argv = [
        python,
        str(evaluator_path),
        "--program_path", str(program_path),
        "--results_dir", str(results_dir),
    ]  # fmt: skip
    for key, value in (extra_args or {}).items():
        argv += [key if key.startswith("-") else f"--{key}", str(value)]
    sandbox = await _run(argv, cwd, limits)
    _drop_links(results_dir)
    failure = sandbox_failure(sandbox, limits, f"evaluator {evaluator_path.name}")
    if failure is not None:
        return _with_run_record(failure, sandbox, limits)
    return _with_run_record(map_command_results(results_dir), sandbox, limits)
