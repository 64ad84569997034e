"""Where a generation's CPU goes: one run of ``peers_throughput.py``'s fast task (its stand-in
server and evaluator) under cProfile with a CPU-time clock, so a shared machine's waiting does
not count.

    .venv/bin/python benchmarks/profile_generations.py [--generations 200] [--top 40]
                                                       [--dump run.prof] [--no-profile]
                                                       [-- KEY=VALUE ...]

Settings after ``--`` are config overrides (the default: novelty and the scratchpad off, as the
OpenEvolve comparison runs). Printed: the main process's CPU and wall time, the CPU of the
processes it waited for (the evaluations, the warm worker), the LLM calls and children, the
machine's load, then the functions by cumulative and by own CPU time; with ``--no-profile``,
the CPU split alone (no profiler cost) and the evaluator's own CPU a call, in this process.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from instant_llm import InstantServer
from peers_throughput import in_process_loop, reply, write_task

from cambrian.api import evolve


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generations", type=int, default=200)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--dump", type=Path, default=None)
    parser.add_argument("--no-profile", action="store_true",
                        help="no cProfile: only the CPU split, without the profiler's own cost")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    settings = args.overrides or ["novelty.enabled=false", "meta.enabled=false"]
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    with tempfile.TemporaryDirectory() as tmp, InstantServer(reply) as server:
        task = write_task(Path(tmp) / "task")
        model = {"provider": "openai", "model": "instant", "base_url": server.base_url,
                 "context_window": 32768}
        overrides = [f"evolution.generations={args.generations}",
                     "llm.models=[" + json.dumps(model) + "]", *settings]
        profile = cProfile.Profile(time.process_time)
        cpu, wall = time.process_time(), time.time()
        if not args.no_profile:
            profile.enable()
        evolve(task, run_dir=Path(tmp) / "run", overrides=overrides)
        profile.disable()
        cpu, wall = time.process_time() - cpu, time.time() - wall
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        with sqlite3.connect(Path(tmp) / "run" / "run.sqlite") as db:
            calls = dict(db.execute("SELECT purpose, COUNT(*) FROM contexts GROUP BY purpose"))
            status = dict(db.execute("SELECT status, COUNT(*) FROM candidates WHERE id > 1 "
                                     "GROUP BY status"))
    n = args.generations
    print(f"{n} generations, settings {settings}")
    print(f"  main process: CPU {cpu:.2f} s ({1000 * cpu / n:.0f} ms/generation), wall "
          f"{wall:.1f} s; the processes it waited for: CPU "
          f"{children.ru_utime + children.ru_stime:.2f} s")
    print(f"  LLM calls by purpose {calls}; candidates by status {status}")
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    if args.no_profile:
        with tempfile.TemporaryDirectory() as tmp:
            alone = in_process_loop(write_task(Path(tmp) / "task"), 20, Path(tmp))
        print(f"  the evaluator alone, in this process (20 calls): CPU "
              f"{1000 * alone['cpu_s'] / 20:.0f} ms a call")
        print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
        return 0
    if args.dump:
        profile.dump_stats(args.dump)
    stats = pstats.Stats(profile, stream=sys.stdout)
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
