"""Per-generation wall and CPU time on a fast task: Cambrian next to OpenEvolve, with the same
instant stand-in LLM.

    .venv/bin/python benchmarks/peers_throughput.py [--generations 40] [--rounds 3]
                     [--openevolve-python /tmp/oe-venv/bin/python] [--old TREE] [--code TREE]
                     [--short N] [--serial]

The task: a program whose EVOLVE-BLOCK holds ``VALUE = N`` and an evaluator (module contract,
``evaluate(program_path)``, as OpenEvolve expects) that loads it and spends about 0.1 s of CPU
(as the fast tasks of issue 17 did). The model is an OpenAI-compatible server on 127.0.0.1
(``instant_llm.py``) that answers every request at once with a SEARCH/REPLACE edit raising
VALUE, so the loops' own costs and the evaluations are all that is timed.

Each system runs as its own process, rounds interleaved (Cambrian, OpenEvolve, Cambrian, ...),
so they see the same machine load. Wall time is from starting the process to its end, minus
the time to its first LLM request (start-up: imports, the initial program's evaluation), over
the n generations asked for (the same divisor for every system; the children Cambrian
evaluated are shown beside, and the whole process's wall time too: with the defaults the
embedding model loads in the background, so its cost falls inside the generations); CPU time is that of the process and every descendant it waited for (the
evaluations, the warm worker, OpenEvolve's worker processes), over the generations.

Cambrian runs two evaluations at once by default (``evolution.max_parallel_evaluations``);
``--serial`` adds a run of the same code with one at a time, beside OpenEvolve's one worker.

With ``--short N`` every system also runs N generations in each round (right after its long
run), and the CPU is split in two: per generation beyond start-up, (CPU of the long run - CPU of
the short one) / (n - N), and the fixed part, the short run's CPU less N such generations
(imports, start-up, the initial program's evaluation, shutting down).

OpenEvolve is not a dependency: install it into a separate environment
(``python -m venv /tmp/oe-venv && /tmp/oe-venv/bin/pip install openevolve``) and pass its
interpreter; without one, only Cambrian and an in-process ``evaluate()`` loop (OpenEvolve's way
of evaluating, without its LLM and database work) are measured.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from instant_llm import InstantServer

ROOT = Path(__file__).resolve().parents[1]

INITIAL = """# EVOLVE-BLOCK-START
VALUE = 1
# EVOLVE-BLOCK-END


def run():
    return VALUE
"""

EVALUATOR = """import importlib.util
import math


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    value = module.run()
    total = 0.0
    for i in range(1, 1_500_000):  # about 0.1 s of CPU: a fast task
        total += math.sqrt(i * value) % 1.0
    return {"combined_score": float(value % 100_000) + total * 1e-9, "value": value}
"""

CAMBRIAN_RUNNER = """
import sys
from cambrian.api import evolve
task, run_dir, url, generations = sys.argv[1:5]
model = {"provider": "openai", "model": "instant", "base_url": url, "context_window": 32768}
import json
overrides = [f"evolution.generations={generations}", "llm.models=[" + json.dumps(model) + "]",
             *sys.argv[5:]]
summary = evolve(task, run_dir=run_dir, overrides=overrides)
print("EVALUATIONS", summary.evaluations)
"""

OPENEVOLVE_RUNNER = """
import asyncio, sys
from openevolve import OpenEvolve
from openevolve.config import Config
task, out, url, generations, workers = sys.argv[1:6]
model = {"name": "instant", "weight": 1.0, "api_base": url, "api_key": "none"}
config = Config.from_dict({
    "max_iterations": int(generations), "log_level": "WARNING", "checkpoint_interval": 1000,
    "llm": {"api_base": url, "api_key": "none", "models": [model],
            "evaluator_models": [model], "timeout": 60, "retries": 0},
    "evaluator": {"parallel_evaluations": int(workers)},
})
evolve = OpenEvolve(f"{task}/initial.py", f"{task}/evaluate.py", config=config, output_dir=out)
best = asyncio.run(evolve.run(iterations=int(generations)))
print("BEST", best.metrics if best else None)
"""

VALUE_LINE = re.compile(r"VALUE = (\d+)")


def reply(messages: list[dict[str, str]], index: int) -> str:
    """A SEARCH/REPLACE edit of the current program's VALUE line (the prompt's last code block
    holding one), raising it to a number no program had."""
    text = "\n".join(str(m.get("content", "")) for m in messages)
    marker = max(text.rfind("# Current Program"), text.rfind("## Current program"),
                 text.rfind("Current program"))
    found = VALUE_LINE.findall(text[marker:] if marker >= 0 else text) or VALUE_LINE.findall(text)
    current = found[0] if found else "1"
    if "ALL the code of the EVOLVE-BLOCK" in text:  # Cambrian asks for a full rewrite
        block = f"# EVOLVE-BLOCK-START\nVALUE = {1000 + index}\n# EVOLVE-BLOCK-END\n"
        return f"Raise VALUE.\n```python\n{block}```\n"
    return (f"Raise VALUE.\n<<<<<<< SEARCH\nVALUE = {current}\n=======\n"
            f"VALUE = {1000 + index}\n>>>>>>> REPLACE\n")


def write_task(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "initial.py").write_text(INITIAL)
    (folder / "evaluate.py").write_text(EVALUATOR)
    return folder


def timed_process(argv: list[str], server: InstantServer, cwd: Path,
                  env: dict[str, str] | None = None) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seen = len(server.arrivals)
    began = time.time()
    completed = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                               check=False, timeout=3600)
    wall = time.time() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed: {completed.stderr[-3000:]}")
    arrivals = server.arrivals[seen:]
    first = (arrivals[0] - began) if arrivals else 0.0
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "startup_s": first, "cpu_s": cpu, "requests": len(arrivals),
            "stdout": completed.stdout.strip()[-300:]}


def evaluated_children(run_dir: Path) -> int:
    import sqlite3

    with sqlite3.connect(run_dir / "run.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM candidates WHERE id > 1 AND status IN "
                              "('correct', 'incorrect')").fetchone()[0])


def openevolve_programs(out: Path) -> int:
    return sum(1 for _ in out.rglob("*.json")) if out.exists() else 0


def in_process_loop(task: Path, generations: int, workdir: Path) -> dict[str, float]:
    """OpenEvolve's evaluation path alone: import the evaluator once, call evaluate()."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("peer_evaluator", task / "evaluate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    began, cpu = time.perf_counter(), time.process_time()
    for index in range(generations):
        path = workdir / f"program_{index}.py"
        path.write_text(INITIAL.replace("VALUE = 1", f"VALUE = {1000 + index}"))
        module.evaluate(str(path))
    return {"wall_s": time.perf_counter() - began, "cpu_s": time.process_time() - cpu}


def compile_tree(tree: Path) -> None:
    """Write the bytecode of a Cambrian tree's modules (as an installed package has), so that no
    run pays for compiling them: with PYTHONDONTWRITEBYTECODE set, a fresh tree would be
    compiled from source at every start, while the peers' installed packages are not."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "cambrian")],
                   check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generations", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--openevolve-python", default=None)
    parser.add_argument("--code", type=Path, default=None,
                        help="run the Cambrian found here (an earlier tree) instead")
    parser.add_argument("--old", type=Path, default=None,
                        help="also run the Cambrian found here (an earlier tree), in turn with "
                             "this one, novelty and scratchpad off")
    parser.add_argument("--only-off", action="store_true",
                        help="leave out the defaults variant")
    parser.add_argument("--short", type=int, default=0,
                        help="also run N generations, to split CPU into fixed and per generation")
    parser.add_argument("--serial", action="store_true",
                        help="also run this Cambrian with one evaluation at a time "
                             "(evolution.max_parallel_evaluations=1, as OpenEvolve's 1 worker)")
    args = parser.parse_args()
    print(f"# {time.strftime('%H:%M:%S')} load: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    n = args.generations
    trees = [args.code or ROOT, *([args.old] if args.old else [])]
    for tree in trees:
        compile_tree(tree)
    print(f"# bytecode written for {', '.join(str(tree) for tree in trees)} (compileall)")
    systems: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, InstantServer(reply) as server:
        root = Path(tmp)
        task = write_task(root / "task")
        env = dict(os.environ)
        if args.code is not None:
            env["PYTHONPATH"] = str(args.code)
        off = ["novelty.enabled=false", "meta.enabled=false"]
        variants: list[tuple[str, list[str], dict[str, str]]] = [
            ("cambrian (defaults)", [], env),
            ("cambrian (novelty and scratchpad off)", off, env),
        ][1 if args.only_off else 0:]
        if args.serial:
            variants.append(("cambrian (off, one evaluation at a time)",
                             [*off, "evolution.max_parallel_evaluations=1"], env))
        if args.old is not None:
            variants.append((f"cambrian {args.old.name} (novelty and scratchpad off)", off,
                             {**env, "PYTHONPATH": str(args.old)}))
        for round_ in range(args.rounds):
            for name, extra, run_env in variants:
                run_dir = root / f"run-{round_}-{len(systems.get(name, []))}-{abs(hash(name))}"
                argv = [sys.executable, "-c", CAMBRIAN_RUNNER, str(task), str(run_dir),
                        server.base_url, str(n), *extra]
                figures = timed_process(argv, server, root, run_env)
                figures["generations"] = evaluated_children(run_dir)
                if args.short:
                    argv[4], argv[6] = str(run_dir) + "-short", str(args.short)
                    figures["short_cpu_s"] = timed_process(argv, server, root, run_env)["cpu_s"]
                systems.setdefault(name, []).append(figures)
            if args.openevolve_python:
                for workers in (1, 2):
                    name = f"openevolve 0.4.1 ({workers} worker{'s' if workers > 1 else ''})"
                    out = root / f"oe-{round_}-{workers}"
                    argv = [args.openevolve_python, "-c", OPENEVOLVE_RUNNER, str(task),
                            str(out), server.base_url, str(n), str(workers)]
                    figures = timed_process(argv, server, root)
                    figures["generations"] = n
                    if args.short:
                        argv[4], argv[6] = str(out) + "-short", str(args.short)
                        figures["short_cpu_s"] = timed_process(argv, server, root)["cpu_s"]
                    systems.setdefault(name, []).append(figures)
        inproc = in_process_loop(task, n, root)
    print(f"fast task (evaluate() about 0.1 s of CPU), {n} generations, instant local LLM, "
          f"{args.rounds} interleaved rounds; medians")
    print("  per generation: of the n asked for, for every system (Cambrian's evaluated children "
          "shown beside); total: the whole process, start-up included")
    print(f"  {'system':<42} {'wall/gen':>9} {'CPU/gen':>9} {'start-up':>9} {'total':>8} "
          f"{'children':>8} {'LLM calls':>9}")
    for name, runs in systems.items():
        per_gen = [(r["wall_s"] - r["startup_s"]) / n for r in runs]
        cpu = [r["cpu_s"] / n for r in runs]
        print(f"  {name:<42} {1000 * statistics.median(per_gen):7.0f}ms "
              f"{1000 * statistics.median(cpu):7.0f}ms "
              f"{statistics.median(r['startup_s'] for r in runs):8.2f}s "
              f"{statistics.median(r['wall_s'] for r in runs):7.1f}s "
              f"{statistics.median(r['generations'] for r in runs):8.0f} "
              f"{statistics.median(r['requests'] for r in runs):9.0f}")
    if args.short:
        print(f"  CPU split by a second run of {args.short} generations in each round "
              f"(medians): per generation beyond start-up = (long - short) / {n - args.short}; "
              "fixed = short - that x its generations")
        for name, runs in systems.items():
            marginal = [(r["cpu_s"] - r["short_cpu_s"]) / (n - args.short) for r in runs]
            fixed = [r["short_cpu_s"] - args.short * m for r, m in zip(runs, marginal)]
            print(f"  {name:<42} per generation {1000 * statistics.median(marginal):5.0f}ms"
                  f"   fixed {statistics.median(fixed):5.2f}s")
    print(f"  {'in-process evaluate() alone (no LLM, no DB)':<42} "
          f"{1000 * inproc['wall_s'] / n:7.0f}ms {1000 * inproc['cpu_s'] / n:7.0f}ms")
    print(f"# {time.strftime('%H:%M:%S')} load: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
