"""Per-case verdicts, as contest judges report them, and how a sandboxed run maps onto them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from cambrian.evaluate.sandbox import SandboxResult

STDERR_TAIL_CHARS = 600
# Allocation failures the sandbox's generic markers miss (Rust aborts with this message).
EXTRA_MEMORY_MARKERS = ("memory allocation of",)


class Verdict(str, Enum):
    AC = "AC"  # accepted: ran cleanly and the scorer gave a score
    WA = "WA"  # wrong answer: the scorer rejected the output
    TLE = "TLE"  # time limit exceeded (CPU or wall clock)
    MLE = "MLE"  # memory limit exceeded
    RE = "RE"  # runtime error: non-zero exit or a fatal signal
    CE = "CE"  # compile error (the whole candidate)
    OLE = "OLE"  # output limit exceeded

    @property
    def meaning(self) -> str:
        return _MEANINGS[self]


_MEANINGS = {
    Verdict.AC: "accepted",
    Verdict.WA: "wrong answer",
    Verdict.TLE: "time limit exceeded",
    Verdict.MLE: "memory limit exceeded",
    Verdict.RE: "runtime error",
    Verdict.CE: "compile error",
    Verdict.OLE: "output limit exceeded",
}


@dataclass(frozen=True)
class CaseResult:
    case_id: str
    verdict: Verdict
    score: float | None  # set for AC only
    time_s: float
    message: str = ""

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.AC

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case_id,
            "verdict": self.verdict.value,
            "score": self.score,
            "time_s": round(self.time_s, 4),
            "message": self.message,
        }


@dataclass(frozen=True)
class RunLimits:
    time_limit_s: float  # CPU seconds
    wall_limit_s: float
    memory_limit_mb: int
    max_output_bytes: int


def _stderr_tail(stderr: str) -> str:
    tail = stderr.strip()[-STDERR_TAIL_CHARS:]
    return f"; stderr: {tail}" if tail else ""


def _names_allocation_failure(stderr: str) -> bool:
    lowered = stderr[-8_000:].lower()
    return any(marker in lowered for marker in EXTRA_MEMORY_MARKERS)


def classify_run(run: SandboxResult, limits: RunLimits) -> tuple[Verdict, str] | None:
    """The verdict of a run that failed before scoring, or None when it must be scored.

    Output overflow is checked first: a program flooding stdout usually also runs out of time,
    and "too much output" is the cause worth reporting.
    """
    if run.disk_exceeded:
        return Verdict.OLE, (f"wrote more than the disk limit of {run.disk_limit_mb} MB; killed, "
                             "and what it wrote removed")
    if run.stdout_truncated_bytes:
        total = limits.max_output_bytes + run.stdout_truncated_bytes
        return Verdict.OLE, (
            f"printed at least {total} bytes; the output limit is {limits.max_output_bytes} bytes"
        )
    if run.timed_out:
        if run.cpu_time_exceeded:
            return Verdict.TLE, f"used more than {limits.time_limit_s:g} s of CPU time"
        return Verdict.TLE, f"still running after {limits.wall_limit_s:g} s (wall clock); killed"
    if run.memory_exceeded or (run.returncode != 0 and _names_allocation_failure(run.stderr)):
        return Verdict.MLE, (
            f"ran out of memory (limit {limits.memory_limit_mb} MB){_stderr_tail(run.stderr)}"
        )
    if run.returncode != 0:
        how = (f"killed by {run.signal_name}" if run.signal_name
               else f"exited with code {run.returncode}")
        return Verdict.RE, how + _stderr_tail(run.stderr)
    return None
