"""Evaluations per minute against the number of Ray workers, next to the W/E limit, and where the
rest of the workers' time goes.

  .venv/bin/python benchmarks/scale.py [--workers 1,2,4] [--per-worker 10] [--eval-s 1.0]
                                       [--rounds 1] [--code TREE] [--old TREE] [--no-local]

For each W, a run with an instant in-process LLM stand-in (``overhead.InstantLLM``) and a task
whose evaluator sleeps ``--eval-s`` seconds, evaluated on a local Ray cluster started for the run
with W CPUs (``execution.backend=ray``, ``execution.num_cpus=W``: W simulated workers, one job
each) and ``evolution.max_parallel_evaluations=W``; for comparison the same run on the local
process pool with W parallel evaluations. An evaluation is a real sandboxed subprocess (the
task's evaluate.py), so its cost is the sleep plus the sandbox's start-up. Each run is its own
process; ``--old TREE`` (an earlier commit's tree, ``git worktree add --detach TREE COMMIT``)
runs the same Ray runs with that code too, in turn with this one (new, old, new, old...).

Throughput is measured from the commit of the initial program (when children start) to the last
commit: children / elapsed. The limit is W / E evaluations per second (E the sleep), i.e. what W
workers would do if evaluating were the only cost. The workers' time (W x elapsed) is split
into: the sleep itself (the limit's share), the sandbox around it (the stored evaluation time
on the worker minus E), Ray's part (the time inside the executor's ``run``, from handing it the
job to its result, minus the stored evaluation time: submitting the job, scheduling it, a
worker process's first job importing Cambrian and building the evaluator, returning the result)
and idle (no evaluation in the executor on that slot: proposals, commits, the last round's
tail). For the local pool, "Ray" is the same span: the scratch folder, the sandbox's launch and
the result read back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

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


def measure(task: Path, run_dir: Path, workers: int, children: int, ray: bool,
            eval_s: float) -> dict[str, float]:
    """One run in this process (the code on sys.path): throughput and the time split."""
    from overhead import InstantLLM, overrides

    from cambrian.api import start
    from cambrian.core.events import CandidateEvaluated, Event

    commits: list[float] = []
    spans: dict[int, float] = {}  # candidate -> seconds inside the executor's run()

    def on_event(event: Event) -> None:
        if isinstance(event, CandidateEvaluated):
            commits.append(time.perf_counter())

    sets = overrides(children, parallel=workers)
    if ray:
        sets += ["execution.backend=ray", f"execution.num_cpus={workers}",
                 f"execution.worker_dir={run_dir.parent / 'workers'}"]
    evolution = start(task, run_dir=run_dir, overrides=sets, providers={"instant": InstantLLM()},
                      subscribers=[on_event])
    executor = evolution.executor
    inner = executor.run

    async def timed_run(job):  # type: ignore[no-untyped-def]
        entered = time.perf_counter()
        outcome = await inner(job)
        if job.candidate_id is not None:
            spans[job.candidate_id] = time.perf_counter() - entered
        return outcome

    executor.run = timed_run  # every part of the loop holds this one executor
    began = time.perf_counter()
    summary = asyncio.run(evolution.run())
    wall = time.perf_counter() - began
    durations = {i: r.duration_s for i, r in
                 ((i, evolution.store.evaluations.latest(i)) for i in range(2, children + 2))
                 if r is not None}
    spread = evolution.store.evaluations.workers()
    evolution.store.close()
    assert summary.evaluations == children and len(commits) == children + 1
    elapsed = commits[-1] - commits[0]
    slot_time = workers * elapsed
    stored = sum(durations.values())
    children_spans = {i: spans[i] for i in durations if i in spans}
    in_flight = sum(children_spans.values())
    transit = sum(children_spans[i] - durations[i] for i in children_spans)
    return {"per_min": 60 * children / elapsed, "wall_s": wall, "elapsed_s": elapsed,
            "eval_s": stored / len(durations), "workers_used": len(spread),
            "latency_s": in_flight / max(1, len(children_spans)),
            "share_sleep": children * eval_s / slot_time,
            "share_sandbox": (stored - children * eval_s) / slot_time,
            "share_ray": transit / slot_time,
            "share_idle": 1 - in_flight / slot_time,
            "first_s": commits[1] - commits[0] if len(commits) > 1 else 0.0}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_one(code: Path | None, task: Path, run_dir: Path, workers: int, children: int, ray: bool,
            eval_s: float) -> dict[str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*([str(code)] if code else []), str(HERE)])
    spec = {"task": str(task), "run_dir": str(run_dir), "workers": workers,
            "children": children, "ray": ray, "eval_s": eval_s}
    completed = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one",
                                json.dumps(spec)], env=env, capture_output=True, text=True,
                               check=False, timeout=1800)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"run failed: {completed.stderr[-3000:]}")
    return dict(json.loads(lines[-1][len("RESULT "):]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--per-worker", type=int, default=10, help="children per worker")
    parser.add_argument("--eval-s", type=float, default=1.0, help="the evaluator's sleep")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--code", type=Path, default=None,
                        help="run the Cambrian found here (a tree) instead of this checkout's")
    parser.add_argument("--old", type=Path, default=None,
                        help="also run the Ray runs with the Cambrian found here, in turn")
    parser.add_argument("--no-local", action="store_true", help="leave out the local pool")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        spec = json.loads(args.one)
        result = measure(Path(spec["task"]), Path(spec["run_dir"]), spec["workers"],
                         spec["children"], spec["ray"], spec["eval_s"])
        print("RESULT " + json.dumps(result))
        return 0
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    for tree in {args.code or HERE.parent, *([args.old] if args.old else [])}:
        # Bytecode for every tree, as an installed package has (none is written for a fresh
        # tree under PYTHONDONTWRITEBYTECODE, and each Ray worker would compile Cambrian).
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tree) / "cambrian")],
                       check=True, capture_output=True)
    variants: list[tuple[str, Path | None, bool]] = [("Ray", args.code, True)]
    if args.old is not None:
        variants.append((f"Ray, {args.old.name}", args.old, True))
    if not args.no_local:
        variants.append(("local pool", args.code, False))
    results: dict[tuple[int, str], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        task = write_task(Path(tmp) / "task", args.eval_s)
        for workers in (int(w) for w in args.workers.split(",")):
            children = args.per_worker * workers
            for round_ in range(args.rounds):
                for name, code, ray in variants:
                    run_dir = Path(tmp) / f"{name.replace(' ', '_')}{workers}-{round_}" / "run"
                    figures = run_one(code, task, run_dir, workers, children, ray, args.eval_s)
                    results.setdefault((workers, name), []).append(figures)
                    print(f"#   W={workers} {name}: {figures['per_min']:.1f}/min "
                          f"(load {load()})", flush=True)
    print(f"sleeping evaluator: {args.eval_s:g} s per evaluation; instant in-process LLM; "
          f"{args.per_worker} children per worker; {args.rounds} round(s), medians")
    print(f"{'workers':>7} {'system':<22} {'evals/min':>9} {'W/E limit':>9} {'/ limit':>8} "
          f"{'eval s':>7} {'latency s':>9} {'sandbox':>8} {'Ray':>6} {'idle':>6} "
          f"{'1st commit s':>12}")
    for (workers, name), runs in results.items():
        limit = 60 * workers / args.eval_s

        def med(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        print(f"{workers:>7} {name:<22} {med('per_min'):>9.1f} {limit:>9.0f} "
              f"{100 * med('per_min') / limit:>7.1f}% {med('eval_s'):>7.3f} "
              f"{med('latency_s'):>9.3f} {100 * med('share_sandbox'):>7.1f}% "
              f"{100 * med('share_ray'):>5.1f}% {100 * med('share_idle'):>5.1f}% "
              f"{med('first_s'):>12.2f}")
    print("eval s: mean stored evaluation time on the worker (sleep + sandbox); latency s: mean "
          "time inside the executor's run() per evaluation; sandbox / Ray / idle: shares of the "
          "workers' time (W x elapsed) spent in the sandbox around the sleep, in the rest of "
          "run() (Ray's part; the local pool's launch), and with no evaluation in run(); "
          "1st commit s: "
          "from the initial program's commit to the first child's. Ray: a local cluster "
          "started for each run with W CPUs (one job each) on this one machine.")
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
