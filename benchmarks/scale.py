"""Evaluations per minute against the number of Ray workers, next to the W/E limit.

  .venv/bin/python benchmarks/scale.py [--workers 1,2,4] [--per-worker 10] [--eval-s 1.0]

For each W, a run with an instant in-process LLM stand-in (``overhead.InstantLLM``) and a task
whose evaluator sleeps ``--eval-s`` seconds, evaluated on a local Ray cluster started for the run
with W CPUs (``execution.backend=ray``, ``execution.num_cpus=W``: W simulated workers, one job
each) and ``evolution.max_parallel_evaluations=W``; for comparison the same run on the local
process pool with W parallel evaluations. An evaluation is a real sandboxed subprocess (the
task's evaluate.py), so its cost is the sleep plus the sandbox's start-up.

Throughput is measured from the commit of the initial program (when children start) to the last
commit: children / elapsed. The limit is W / E evaluations per second (E the sleep), i.e. what W
workers would do if evaluating were the only cost.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from overhead import InstantLLM, overrides

from cambrian.api import start
from cambrian.core.events import CandidateEvaluated, Event

INITIAL = "# EVOLVE-BLOCK-START\nVALUE = 1\n# EVOLVE-BLOCK-END\n\n\ndef run():\n    return VALUE\n"
EVALUATOR = """import runpy
import time


def evaluate(program_path):
    value = runpy.run_path(program_path)["run"]()
    time.sleep({sleep})
    return {{"combined_score": float(value % 9973)}}
"""


def write_task(root: Path, sleep_s: float) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "initial.py").write_text(INITIAL)
    (root / "evaluate.py").write_text(EVALUATOR.format(sleep=sleep_s))
    return root


def measure(task: Path, run_dir: Path, workers: int, children: int, ray: bool) -> dict[str, float]:
    commits: list[float] = []

    def on_event(event: Event) -> None:
        if isinstance(event, CandidateEvaluated):
            commits.append(time.perf_counter())

    sets = overrides(children, parallel=workers)
    if ray:
        sets += ["execution.backend=ray", f"execution.num_cpus={workers}",
                 f"execution.worker_dir={run_dir.parent / 'workers'}"]
    evolution = start(task, run_dir=run_dir, overrides=sets, providers={"instant": InstantLLM()},
                      subscribers=[on_event])
    began = time.perf_counter()
    summary = asyncio.run(evolution.run())
    wall = time.perf_counter() - began
    durations = [r.duration_s for r in map(evolution.store.evaluations.latest,
                                           range(2, children + 2)) if r is not None]
    spread = evolution.store.evaluations.workers()
    evolution.store.close()
    assert summary.evaluations == children and len(commits) == children + 1
    elapsed = commits[-1] - commits[0]
    return {"per_min": 60 * children / elapsed, "wall_s": wall,
            "eval_s": sum(durations) / len(durations), "workers_used": len(spread)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--per-worker", type=int, default=10, help="children per worker")
    parser.add_argument("--eval-s", type=float, default=1.0, help="the evaluator's sleep")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        task = write_task(Path(tmp) / "task", args.eval_s)
        for workers in (int(w) for w in args.workers.split(",")):
            children = args.per_worker * workers
            ray = measure(task, Path(tmp) / f"ray{workers}" / "run", workers, children, ray=True)
            local = measure(task, Path(tmp) / f"local{workers}" / "run", workers, children,
                            ray=False)
            rows.append((workers, children, ray, local))
    print(f"sleeping evaluator: {args.eval_s:g} s per evaluation; instant in-process LLM; "
          f"{args.per_worker} children per worker")
    print(f"{'workers':>7} {'children':>8} {'Ray evals/min':>14} {'local pool evals/min':>21} "
          f"{'W/E limit':>10} {'Ray / limit':>12} {'eval s (Ray)':>13} {'Ray nodes':>10}")
    for workers, children, ray, local in rows:
        limit = 60 * workers / args.eval_s
        print(f"{workers:>7} {children:>8} {ray['per_min']:>14.1f} {local['per_min']:>21.1f} "
              f"{limit:>10.0f} {100 * ray['per_min'] / limit:>11.0f}% {ray['eval_s']:>13.2f} "
              f"{ray['workers_used']:>10}")
    print("Ray: a local cluster started for each run with W CPUs (one job each), so one node "
          "(HOST/NODE) runs every job; eval s: mean stored evaluation time on the workers "
          "(sleep + sandbox start-up).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
