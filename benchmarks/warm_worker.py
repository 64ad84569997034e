"""Per-evaluation cost of the sandbox: a fresh interpreter per evaluation (cold) against the warm
worker (``cambrian/evaluate/warm_worker.py``: forked from an interpreter that has already
imported the evaluator's packages), both under the same containment, next to calling the same
``evaluate()`` in this process (what OpenEvolve does, uncontained).

    .venv/bin/python benchmarks/warm_worker.py [--evaluations 30]

Three evaluators of one tiny program: ``plain`` (standard library only), ``numpy`` (imports
numpy, as most tasks do), and ``circle packing`` (``examples/circle_packing``, a command-
contract script importing numpy, on its initial program). Cold and warm evaluations alternate,
so both see the same machine load; the first warm evaluation (which starts the server) is
reported apart. Prints the median and the 10th-90th percentile wall time per evaluation.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cambrian.evaluate.runner import EvaluatorSettings, ProgramEvaluator

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = "# EVOLVE-BLOCK-START\nVALUE = 3\n# EVOLVE-BLOCK-END\n"
EVALUATORS = {
    "plain": ("import runpy\n\ndef evaluate(program_path):\n"
              "    return {'combined_score': float(runpy.run_path(program_path)['VALUE'])}\n"),
    "numpy": ("import runpy\nimport numpy as np\n\ndef evaluate(program_path):\n"
              "    value = runpy.run_path(program_path)['VALUE']\n"
              "    return {'combined_score': float(np.sqrt(np.float64(value)) ** 2)}\n"),
}


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    low, high = ordered[len(ordered) // 10], ordered[(len(ordered) * 9) // 10]
    return (f"median {1000 * statistics.median(values):6.1f} ms "
            f"(p10-p90 {1000 * low:5.1f}-{1000 * high:5.1f})")


async def measure(name: str, evaluator_path: Path, program: str, evaluations: int,
                  workdir: Path) -> None:
    cold = ProgramEvaluator(EvaluatorSettings(evaluator_path=evaluator_path))
    warm = ProgramEvaluator(EvaluatorSettings(evaluator_path=evaluator_path, warm_worker=True))
    times: dict[str, list[float]] = {"cold": [], "warm": []}
    first_warm = 0.0
    for index in range(evaluations + 1):
        for label, evaluator in (("cold", cold), ("warm", warm)):
            began = time.perf_counter()
            result = await evaluator.evaluate(program, workdir / f"{label}{index}")
            spent = time.perf_counter() - began
            assert result.status == "ok", result.error
            if index == 0:
                first_warm = spent if label == "warm" else first_warm
                continue  # the cold one warms the file cache; the warm one starts the server
            times[label].append(spent)
    assert warm.warm is not None and warm.warm.disabled is None, warm.warm
    await warm.close()
    in_process = in_process_times(evaluator_path, program, evaluations, workdir)
    print(f"{name} (preloaded by the warm worker: {', '.join(warm.warm.loaded) or 'nothing'})")
    print(f"  cold: a fresh interpreter per evaluation  {percentiles(times['cold'])}")
    print(f"  warm: forked from the warm worker         {percentiles(times['warm'])}"
          f"; first, with the server's start {1000 * first_warm:.0f} ms")
    if in_process:
        print(f"  evaluate() called in this process        {percentiles(in_process)}"
              " (uncontained)")
    saved = statistics.median(times["cold"]) - statistics.median(times["warm"])
    print(f"  saved per evaluation: {1000 * saved:.1f} ms "
          f"({statistics.median(times['cold']) / statistics.median(times['warm']):.1f}x)")


def in_process_times(evaluator_path: Path, program: str, evaluations: int,
                     workdir: Path) -> list[float]:
    """OpenEvolve's way: import the evaluator once, call evaluate(path) per program."""
    source = evaluator_path.read_text()
    if "def evaluate(program_path)" not in source:
        return []
    spec = importlib.util.spec_from_file_location("bench_evaluator", evaluator_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    times = []
    for index in range(evaluations):
        path = workdir / f"inproc{index}.py"
        path.write_text(program)
        began = time.perf_counter()
        module.evaluate(str(path))
        times.append(time.perf_counter() - began)
    return times


async def main_async(evaluations: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for name, code in EVALUATORS.items():
            task = workdir / name
            task.mkdir()
            (task / "evaluate.py").write_text(code)
            await measure(name, task / "evaluate.py", PROGRAM, evaluations, workdir / "w")
        circle = ROOT / "examples" / "circle_packing"
        await measure("circle packing (command contract)", circle / "evaluate.py",
                      (circle / "initial.py").read_text(), evaluations, workdir / "c")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluations", type=int, default=30)
    args = parser.parse_args()
    print(f"wall time per evaluation, {args.evaluations} of each, cold and warm alternating")
    asyncio.run(main_async(args.evaluations))
    return 0


if __name__ == "__main__":
    sys.exit(main())
