"""CPU of one contained evaluation, split between Cambrian's process and the processes it waited
for (the warm worker's server, the sandbox's shim, its init and the command), old code against
new code in turn.

    .venv/bin/python benchmarks/eval_cpu.py [--evaluations 40] [--rounds 3] [--code TREE]
                                            [--old TREE] [--cold]

The evaluator is a module-contract ``evaluate(program_path)`` that only loads the program (no
work of its own), so what is measured is the evaluation's overhead: the scratch folder, the
sandbox (namespaces, mount view, forks, limits), module_runner, loading the evaluator and the
program, the result. Each round runs ``--evaluations`` evaluations through ``ProgramEvaluator``
(the warm worker on, as by default; ``--cold`` for a fresh interpreter each) in a process of
its own, this checkout's code and then ``--old``'s, and reports CPU per evaluation: the
children's user and system time (the warm worker's server is started before and reaped after,
so its own start-up is included, spread over the evaluations) and Cambrian's own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

MEASURE = """
import asyncio, json, resource, sys, tempfile, time
from pathlib import Path
from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

PROGRAM = "# EVOLVE-BLOCK-START\\nVALUE = 3\\n# EVOLVE-BLOCK-END\\n"
EVALUATOR = (
    "import importlib.util\\n\\n\\ndef evaluate(program_path):\\n"
    "    spec = importlib.util.spec_from_file_location('candidate', program_path)\\n"
    "    module = importlib.util.module_from_spec(spec)\\n"
    "    spec.loader.exec_module(module)\\n"
    "    return {'combined_score': float(module.VALUE)}\\n")


def usage():
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    return (children.ru_utime, children.ru_stime, own.ru_utime + own.ru_stime)


async def main(count, warm):
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / "task"
        task.mkdir()
        (task / "evaluate.py").write_text(EVALUATOR)
        evaluator = ProgramEvaluator(EvaluatorSettings(evaluator_path=task / "evaluate.py",
                                                       warm_worker=warm))
        before, began = usage(), time.perf_counter()
        for index in range(count):
            result = await evaluator.evaluate(PROGRAM, Path(tmp) / f"work{index}")
            assert result.status == "ok", result.error
        await evaluator.close()
        after, wall = usage(), time.perf_counter() - began
    print("RESULT " + json.dumps([(b - a) / count for a, b in zip(before, after)]
                                 + [wall / count]))


asyncio.run(main(int(sys.argv[1]), sys.argv[2] == "warm"))
"""


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(tree: Path | None, evaluations: int, warm: bool) -> list[float]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    # Run from the tree: with -c, the working folder comes first on sys.path.
    completed = subprocess.run([sys.executable, "-c", MEASURE, str(evaluations),
                                "warm" if warm else "cold"], env=env, cwd=tree or HERE.parent,
                               capture_output=True, text=True, check=False, timeout=1800)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(completed.stderr[-3000:])
    return list(json.loads(lines[-1][len("RESULT "):]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluations", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--code", type=Path, default=None,
                        help="the new code's tree (default: this checkout)")
    parser.add_argument("--old", type=Path, default=None)
    parser.add_argument("--cold", action="store_true", help="a fresh interpreter each")
    args = parser.parse_args()
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    trees: list[tuple[str, Path | None]] = [(f"new ({args.code or 'this checkout'})",
                                             args.code)]
    if args.old is not None:
        trees.append((f"old ({args.old})", args.old))
    for _, tree in trees:  # bytecode, as an installed package has (PYTHONDONTWRITEBYTECODE)
        root = tree or HERE.parent
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "cambrian")],
                       check=True, capture_output=True)
    figures: dict[str, list[list[float]]] = {name: [] for name, _ in trees}
    for _ in range(args.rounds):
        for name, tree in trees:
            figures[name].append(run(tree, args.evaluations, not args.cold))
    print(f"{'warm worker' if not args.cold else 'cold'} evaluations of a do-nothing evaluator, "
          f"{args.evaluations} a round, {args.rounds} interleaved rounds; medians, ms per "
          "evaluation")
    print(f"  {'code':<40} {'children user':>13} {'children sys':>12} {'Cambrian':>9} "
          f"{'total CPU':>9} {'wall':>7}")
    for name, rounds in figures.items():
        user, system, own, wall = (statistics.median(r[i] for r in rounds) for i in range(4))
        total = statistics.median(r[0] + r[1] + r[2] for r in rounds)
        print(f"  {name:<40} {1000 * user:13.1f} {1000 * system:12.1f} {1000 * own:9.1f} "
              f"{1000 * total:9.1f} {1000 * wall:7.1f}")
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
