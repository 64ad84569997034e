"""How soon the README's first command shows a gain: the demo's run, as a timeline.

    .venv/bin/python benchmarks/demo_time.py [--minutes 10] [--run-dir DIR]
    .venv/bin/python benchmarks/demo_time.py --read DIR   # a run that already exists

Runs ``cambrian run examples/circle_packing`` (what ``./scripts/demo.sh`` runs: the example's
config, the embedded local model) for ``--minutes`` of wall time, then prints every candidate
with the seconds since the run was created (before the model is loaded), its intent (and the improvement step's
function: the score or the move), its status and score, and the first time the best score rose
above the initial program's, with the LLM calls spent by then. The machine's load is printed
before and after; a gain's time depends on it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cambrian.core.status import CandidateStatus  # noqa: E402
from cambrian.store.store import Store  # noqa: E402


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                           capture_output=True, text=True)
    return found.stdout.strip() or "unknown"


def run_demo(run_dir: Path, minutes: float) -> None:
    command = [sys.executable, "-m", "cambrian", "run", str(ROOT / "examples" / "circle_packing"),
               "-o", str(run_dir), "-q", "--set", f"budget.max_wall_time_s={int(minutes * 60)}"]
    print("$ " + " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=False)


def timeline(run_dir: Path) -> None:
    store = Store.open(run_dir, read_only=True)
    try:
        rows = store.candidates.list()
        calls = sorted(context.created_at for context in store.contexts.list())
        info = store.runs.info()
        start = info.created_at  # the run folder made, the model not yet loaded
        print(f"run {info.task_name}, code {info.code_version}, model "
              f"{info.config.get('llm', {}).get('models', [{}])[0].get('model', '?')}")
        initial = rows[0].score
        best = initial
        first_gain = None
        for row in rows:
            notes = row.notes
            what = str(notes.get("intent") or "-")
            if notes.get("focus_function"):
                what += f" ({notes['focus_function']})"
            if notes.get("follows_up"):
                what += " follow-up"
            score = f"{row.score:.4f}" if row.score is not None else "-"
            print(f"{row.created_at - start:7.0f} s  candidate {row.id:3d}  parent "
                  f"{row.parent_id or '-':>3}  {row.status:13s} {score:>8s}  {what}")
            if (row.status is CandidateStatus.CORRECT and row.score is not None
                    and best is not None and row.score > best):
                best = row.score
                if first_gain is None:
                    first_gain = row
        print(f"initial {initial:.4f}, best {best:.4f}; {len(calls)} LLM calls, "
              f"{len(rows) - 1} children in {rows[-1].created_at - start:.0f} s")
        if first_gain is None:
            print("no gain")
        else:
            spent = sum(1 for at in calls if at <= first_gain.created_at)
            print(f"first gain: candidate {first_gain.id} ({first_gain.notes.get('intent')}) "
                  f"{first_gain.score:.4f} at {first_gain.created_at - start:.0f} s, "
                  f"after {spent} LLM calls")
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--run-dir", type=Path, default=None)
    parser.add_argument("--read", type=Path, default=None, help="print an existing run's timeline")
    args = parser.parse_args()
    print(f"# script at commit {commit()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores, load {load()}")
    if args.read is not None:
        timeline(args.read)
    else:
        run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="demo-")) / "run"
        run_demo(run_dir, args.minutes)
        timeline(run_dir)
    print(f"# load after {load()}")


if __name__ == "__main__":
    main()
