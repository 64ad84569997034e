"""Time from ``cambrian run`` to its first LLM request, as a user sees it.

    .venv/bin/python benchmarks/startup.py [--task examples/circle_packing] [--repeats 3]
                                           [--code PATH]

Starts ``python -m cambrian run TASK -g 1`` as a fresh process with the task's defaults, the
model being an instant local OpenAI-compatible server (``instant_llm.py``), and measures the
wall time from starting the process to the server receiving the first request. Variants: the
defaults (novelty rejection with the bundled MiniLM embedding model on) and ``novelty.enabled
=false``. ``--code PATH`` runs the Cambrian found at PATH instead of this checkout (e.g. an
earlier commit's tree: ``git archive HEAD | tar -x -C /tmp/old``), for before/after figures.
The process is stopped after the first request.
"""

from __future__ import annotations

import argparse
import json
import os
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default=str(ROOT / "examples" / "circle_packing"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--code", type=Path, default=None)
    args = parser.parse_args()
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
