"""Apply resource limits to the current process, then exec the real command.

Usage: python -I -S limits_exec.py MEMORY_MB|none CPU_SECONDS|none -- COMMAND [ARGS...]

The sandbox starts this file instead of the command itself so that rlimits are
set in the child before exec, without `preexec_fn` (which is unsafe in a
process with threads). Stdlib only, no package imports: it runs by path, once
per evaluation, and must start fast.
"""

from __future__ import annotations

import math
import os
import resource
import sys

EXEC_FAILED_EXIT_CODE = 127
USAGE = "usage: limits_exec.py MEMORY_MB|none CPU_SECONDS|none -- COMMAND [ARGS...]"


def _clamped_to_hard_limit(which: int, wanted: int) -> int:
    # An unprivileged process cannot raise its hard limit; asking for more than
    # it has would fail, so the existing (tighter) limit wins.
    _, hard = resource.getrlimit(which)
    if hard == resource.RLIM_INFINITY:
        return wanted
    return min(wanted, hard)


def apply_limits(memory_limit_mb: int | None, cpu_time_limit_s: float | None) -> None:
    # Crashing candidates must not litter the task folder with core files.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_limit_mb is not None:
        limit = _clamped_to_hard_limit(resource.RLIMIT_AS, memory_limit_mb * 1024 * 1024)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if cpu_time_limit_s is not None:
        soft = _clamped_to_hard_limit(resource.RLIMIT_CPU, max(1, math.ceil(cpu_time_limit_s)))
        hard = _clamped_to_hard_limit(resource.RLIMIT_CPU, soft + 1)
        # SIGXCPU at the soft limit; SIGKILL one CPU-second later if it is ignored.
        resource.setrlimit(resource.RLIMIT_CPU, (soft, max(soft, hard)))


def _parse_optional_number(text: str, kind: type) -> int | float | None:
    return None if text == "none" else kind(text)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print(USAGE, file=sys.stderr)
        return 2
    memory_limit_mb = _parse_optional_number(argv[0], int)
    cpu_time_limit_s = _parse_optional_number(argv[1], float)
    command = argv[3:]
    apply_limits(memory_limit_mb, cpu_time_limit_s)  # type: ignore[arg-type]
    try:
        os.execvp(command[0], command)
    except OSError as error:
        print(f"cambrian sandbox: cannot exec {command[0]!r}: {error}", file=sys.stderr)
        return EXEC_FAILED_EXIT_CODE
    return EXEC_FAILED_EXIT_CODE  # unreachable: execvp only returns by raising


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
