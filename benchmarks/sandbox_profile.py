"""Where one contained evaluation's CPU goes, by process: Cambrian's own, the warm worker's
server, the sandbox's shim, its init and the command, each split into kernel and user time, with
the functions that take most of it (``perf record``).

    .venv/bin/python benchmarks/sandbox_profile.py [--evaluations 200] [--frequency 4000]

The evaluator only loads the program (no work of its own), as in ``eval_cpu.py``, so everything
measured is the evaluation's overhead. The evaluations run through ``ProgramEvaluator`` with the
warm worker (the default) in a process of their own, under ``perf record -e cpu-clock`` on all
its descendants; the sandbox's processes carry their names (``cambrian-warm``,
``cambrian-shim``, ``cambrian-init``, ``cambrian-eval``), so every sample is attributed by the
name of the process it was taken in (the few instructions between a fork and the child's rename
count towards the parent's name; the fork itself is the parent's work). Milliseconds are
samples / frequency / evaluations (the warm worker's start-up spread over them, as in
``eval_cpu.py``). ``perf`` must be installed and allowed to sample (root, or
``kernel.perf_event_paranoid`` <= 1); without it the script says so and exits 2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from eval_cpu import MEASURE, load  # the same evaluations eval_cpu.py times, run under perf

HERE = Path(__file__).resolve().parent

KERNEL_ADDRESSES = 0xFFFF800000000000  # x86-64: the kernel's half of the address space
ROLES = {"cambrian-warm": "warm worker's server", "cambrian-shim": "shim",
         "cambrian-init": "init (PID 1)", "cambrian-eval": "command"}


def record(evaluations: int, frequency: int, data: Path) -> None:
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(frequency), "-o",
                    str(data), "--", sys.executable, "-c", MEASURE, str(evaluations), "warm"],
                   cwd=HERE.parent, check=True, capture_output=True, timeout=1800)


def samples(data: Path) -> list[tuple[str, int, str, bool]]:
    """(process name, pid, function, in the kernel) of every sample."""
    script = subprocess.run(["perf", "script", "-i", str(data), "-F", "comm,pid,ip,sym"],
                            check=True, capture_output=True, text=True, timeout=600).stdout
    found = []
    for line in script.splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[1].isdigit():
            continue
        symbol = " ".join(parts[3:]) or "[unknown]"  # after the address
        in_kernel = int(parts[2], 16) >= KERNEL_ADDRESSES  # kernel modules' samples too
        found.append((parts[0], int(parts[1]), symbol, in_kernel))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluations", type=int, default=200)
    parser.add_argument("--frequency", type=int, default=4000, help="samples a CPU-second")
    parser.add_argument("--top", type=int, default=8, help="functions shown per process")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        print("perf is not installed (linux-tools / linux-perf): nothing measured")
        return 2
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid")
    if os.geteuid() != 0 and paranoid.exists() and int(paranoid.read_text()) > 1:
        # perf would sample user space only and report no kernel time at all.
        print(f"kernel.perf_event_paranoid is {paranoid.read_text().strip()}: run as root or "
              "set it to 1 or less; nothing measured")
        return 2
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        try:
            record(args.evaluations, args.frequency, data)
        except subprocess.CalledProcessError as error:
            message = error.stderr.decode(errors="replace")[-500:]
            print(f"perf record failed (not allowed to sample?): {message}")
            return 2
        taken = samples(data)
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    # The measuring process is Cambrian's (the loop's side of an evaluation): the most sampled
    # process without a sandbox name; other unnamed ones (the interpreter before a rename) are
    # counted apart.
    unnamed = Counter(pid for comm, pid, _, _ in taken if comm not in ROLES)
    main_pid = unnamed.most_common(1)[0][0] if unnamed else -1
    per_role: dict[str, Counter[tuple[str, bool]]] = defaultdict(Counter)
    for comm, pid, symbol, kernel in taken:
        role = ROLES.get(comm, "Cambrian's process" if pid == main_pid else "other")
        per_role[role][(symbol, kernel)] += 1
    scale = 1000 / args.frequency / args.evaluations
    print(f"{args.evaluations} warm evaluations of a do-nothing evaluator, perf cpu-clock at "
          f"{args.frequency} Hz; ms of CPU per evaluation")
    print(f"  {'process':<22} {'kernel':>7} {'user':>7} {'total':>7}")
    total = 0.0
    order = ["Cambrian's process", *ROLES.values(), "other"]
    for role in order:
        counts = per_role.get(role)
        if not counts:
            continue
        kernel = sum(n for (_, k), n in counts.items() if k) * scale
        user = sum(n for (_, k), n in counts.items() if not k) * scale
        total += kernel + user
        print(f"  {role:<22} {kernel:7.2f} {user:7.2f} {kernel + user:7.2f}")
    print(f"  {'all':<22} {'':>7} {'':>7} {total:7.2f}")
    print("functions taking most of each process's time (ms per evaluation; [k] kernel):")
    for role in order:
        counts = per_role.get(role)
        if not counts:
            continue
        top = ", ".join(f"{'[k] ' if kernel else ''}{symbol} {n * scale:.2f}"
                        for (symbol, kernel), n in counts.most_common(args.top))
        print(f"  {role}: {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
