"""Time from ``cambrian run`` to its first LLM request, as a user sees it.

    .venv/bin/python benchmarks/startup.py [--task examples/circle_packing] [--repeats 3]
                                           [--code PATH] [--old PATH] [--cli-only]

Starts ``python -m cambrian run TASK -g 1`` as a fresh process with the task's defaults, the
model being an instant local OpenAI-compatible server (``instant_llm.py``), and measures the
wall time from starting the process to the server receiving the first request. Variants: the
defaults (novelty rejection with the bundled MiniLM embedding model on) and ``novelty.enabled
=false``. ``--code PATH`` runs the Cambrian found at PATH instead of this checkout (e.g. an
earlier commit's tree: ``git archive HEAD | tar -x -C /tmp/old``), for before/after figures.
The process is stopped after the first request.

``--old PATH`` (an earlier tree, e.g. ``git worktree add --detach /tmp/old COMMIT``) also times
``cambrian --version`` and ``cambrian --help`` with that tree and with this checkout, in turn
(old, new, old, ...), as wall and CPU time (the process's user + system) with the machine's load
printed before and after; ``--cli-only`` times only those.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from instant_llm import InstantServer

ROOT = Path(__file__).resolve().parents[1]


BRIEF_MARKER = "You read problem statements carefully"  # the problem brief's system prompt


def is_proposal(messages: list[dict[str, str]]) -> bool:
    return not any(BRIEF_MARKER in str(m.get("content", "")) for m in messages)


def first_request_s(task: Path, extra: list[str], code: Path | None) -> tuple[float, float]:
    """(seconds to the first request, to the first proposal's request)."""
    with InstantServer(lambda messages, index: "WORKED:\n- x\n") as server, \
            tempfile.TemporaryDirectory() as tmp:
        model = {"provider": "openai", "model": "instant", "base_url": server.base_url}
        env = dict(os.environ)
        if code is not None:
            env["PYTHONPATH"] = str(code)
        argv = [sys.executable, "-m", "cambrian", "run", str(task), "--run-dir",
                str(Path(tmp) / "run"), "-g", "1", "-q", "--set",
                f"llm.models=[{json.dumps(model)}]", *extra]
        began = time.time()
        process = subprocess.Popen(argv, cwd=tmp, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
        try:
            while not any(is_proposal(m) for m in list(server.requests)):
                if process.poll() is not None:
                    raise RuntimeError("cambrian run ended before a proposal's LLM request: "
                                       + process.stderr.read().decode()[-2000:])
                time.sleep(0.005)
            proposal = next(i for i, m in enumerate(server.requests) if is_proposal(m))
            return server.arrivals[0] - began, server.arrivals[proposal] - began
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cli_time(code: Path, argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of ``python -m cambrian ARGV`` with ``code`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(code), "COLUMNS": "100"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:  # not this checkout's folder: it would shadow
        subprocess.run([sys.executable, "-m", "cambrian", *argv], cwd=tmp, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cli_figures(old: Path, repeats: int) -> None:
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    print(f"`cambrian --version` and `cambrian --help`: old code ({old}) and this checkout, "
          f"{repeats} runs each, interleaved; medians")
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for _ in range(repeats):
        for argv in (["--version"], ["--help"]):
            for name, code in (("old", old), ("new", ROOT)):
                times.setdefault((" ".join(argv), name), []).append(cli_time(code, argv))
    for (argv, name), values in times.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"  cambrian {argv:<10} {name:<4} wall {wall:5.2f} s  CPU {cpu:5.2f} s "
              f"(walls: {', '.join(f'{v[0]:.2f}' for v in values)})")
    for argv in ("--version", "--help"):
        old_cpu = statistics.median(v[1] for v in times[(argv, "old")])
        new_cpu = statistics.median(v[1] for v in times[(argv, "new")])
        old_wall = statistics.median(v[0] for v in times[(argv, "old")])
        new_wall = statistics.median(v[0] for v in times[(argv, "new")])
        print(f"  cambrian {argv:<10} new/old: wall {new_wall / old_wall:.2f}x, "
              f"CPU {new_cpu / old_cpu:.2f}x")
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default=str(ROOT / "examples" / "circle_packing"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--code", type=Path, default=None)
    parser.add_argument("--old", type=Path, default=None)
    parser.add_argument("--cli-only", action="store_true")
    args = parser.parse_args()
    if args.old is not None:
        cli_figures(args.old, max(args.repeats, 5))
        if args.cli_only:
            return 0
    variants = [("defaults (novelty with the local embedding model)", []),
                ("novelty.enabled=false", ["--set", "novelty.enabled=false"])]
    print(f"time from `cambrian run {Path(args.task).name} -g 1` to the first LLM request "
          f"(instant local server; {args.repeats} runs each, interleaved"
          + (f"; code from {args.code}" if args.code else "") + ")")
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in variants}
    for _ in range(args.repeats):
        for name, extra in variants:
            times[name].append(first_request_s(Path(args.task), extra, args.code))
    for name, values in times.items():
        for label, index in (("first request (the problem brief)", 0),
                             ("first proposal's request", 1)):
            runs = [v[index] for v in values]
            print(f"  {name:<50} {label:<34} median {statistics.median(runs):5.2f} s "
                  f"(runs: {', '.join(f'{v:.2f}' for v in runs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
