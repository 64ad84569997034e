"""LLM calls and memory the novelty filter costs with the default settings: an earlier tree
next to the code now, from one interleaved run.

    .venv/bin/python benchmarks/novelty_calls.py --old /tmp/old-tree [--new /tmp/new-tree]
                                                 [--generations 30] [--rounds 2] [--delay 1.0]

``--old`` is an earlier Cambrian tree (``git worktree add --detach /tmp/old-tree COMMIT``, or
the same commit with the part under test switched off, named by ``--old-label``);
each run is ``cambrian.api.evolve`` in a fresh process with that tree (or this checkout) first
on ``PYTHONPATH``, rounds interleaved (old, new, new with novelty off, old, ...), so all see
the same machine load, printed before and after. The new tree runs with novelty off too,
and with ``novelty.judge_when=always`` where it has that setting (the judge asked for every
near-copy, as before issue 35's cost test).

The model is an OpenAI-compatible stand-in on the loopback (``instant_llm.py``; a remote
provider to Cambrian, so ``novelty.judge: auto`` has a judge), answering each call after
``--delay`` seconds (a remote model's latency; 0: at once). It answers each proposal with
one of five edits of the program it is shown, in turn: a changed constant, local variables
renamed, a comment added, the same constant change as before on that program (a repeat), a new
line in the loop. As the novelty judge it answers DIFFERENT when the diff adds more lines than
it removes, else SAME. Embeddings are the bundled MiniLM (the default), so which proposals
embed as near-copies is the real model's doing.

Printed per variant (medians over rounds): children evaluated, LLM calls by purpose (the
ledger's ``contexts.purpose``; ``novelty`` is the judge), candidates refused by novelty, the
process's peak resident memory, and its wall time; per run, what decided each novelty check
(``decided`` in the child's notes: ``cost`` when evaluating was cheaper than the judge) and the
median evaluation time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from instant_llm import InstantServer

ROOT = Path(__file__).resolve().parents[1]

INITIAL = """# EVOLVE-BLOCK-START
def run():
    total = 0
    for i in range(100):
        total += i
    return total
# EVOLVE-BLOCK-END
"""

EVALUATOR = """import importlib.util


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"combined_score": float(module.run() % 9973)}
"""

RUNNER = """
import json, resource, sqlite3, sys, time
began = time.time()
from cambrian.api import evolve
task, run_dir, url, generations = sys.argv[1:5]
model = {"provider": "openai", "model": "instant", "base_url": url, "context_window": 32768}
overrides = [f"evolution.generations={generations}", "llm.models=[" + json.dumps(model) + "]",
             *sys.argv[5:]]
evolve(task, run_dir=run_dir, overrides=overrides)
db = sqlite3.connect(f"{run_dir}/run.sqlite")
print("RESULT", json.dumps({
    "wall_s": time.time() - began,
    "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "calls": dict(db.execute("SELECT purpose, COUNT(*) FROM contexts GROUP BY purpose")),
    "status": dict(db.execute("SELECT status, COUNT(*) FROM candidates WHERE id > 1 "
                              "GROUP BY status")),
    "decided": dict(db.execute("SELECT json_extract(notes_json, '$.decided'), COUNT(*) "
                               "FROM candidates WHERE json_extract(notes_json, '$.decided') "
                               "IS NOT NULL GROUP BY 1")),
    "evaluation_s": [r[0] for r in db.execute("SELECT duration_s FROM evaluations "
                                              "WHERE stage = 'main'")],
}))
"""

CODE = re.compile(r"## Current program\n```[a-z+]*\n(.*?)```", re.DOTALL)
MARKED = re.compile(r"# EVOLVE-BLOCK-START\n(.*?)\n# EVOLVE-BLOCK-END", re.DOTALL)
DIFF = re.compile(r"```diff\n(.*?)```", re.DOTALL)


class StandIn:
    """The stand-in model: five kinds of edit in turn, and a judge that reads the diff."""

    def __init__(self) -> None:
        self.repeats: dict[str, str] = {}  # block -> its constant change, for the repeat

    def __call__(self, messages: list[dict[str, str]], index: int) -> str:
        text = "\n".join(str(m.get("content", "")) for m in messages)
        if "Answer with one word" in text:  # the novelty judge
            diff = DIFF.search(text)
            lines = diff.group(1).splitlines() if diff else []
            added = sum(ln.startswith("+") and not ln.startswith("+++") for ln in lines)
            removed = sum(ln.startswith("-") and not ln.startswith("---") for ln in lines)
            return "DIFFERENT" if added > removed else "SAME"
        shown = CODE.search(text)
        block = MARKED.search(shown.group(1)) if shown else None
        if block is None:  # a side call (the scratchpad): any short answer
            return "- keep the loop simple\n"
        old = block.group(1)
        new = self.edit(old, index)
        if "ALL the code of the EVOLVE-BLOCK" in text:  # a full rewrite was asked for
            return f"```python\n# EVOLVE-BLOCK-START\n{new}\n# EVOLVE-BLOCK-END\n```\n"
        return f"Edit.\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"

    def edit(self, block: str, index: int) -> str:
        kind = index % 5
        name = (re.search(r"(\w+) = 0", block) or re.search(r"(\w+)", block)).group(1)
        if kind in (0, 3):  # a changed constant; 3: the same change as before on this block
            if kind == 3 and block in self.repeats:
                return self.repeats[block]
            changed = re.sub(r"range\((\d+)\)", f"range({100 + index})", block, count=1)
            self.repeats[block] = changed
            return changed
        if kind == 1:  # local variables renamed
            return re.sub(rf"\b{name}\b", f"v{index}", block)
        if kind == 2:  # a comment
            return block.replace("def run():", f"def run():  # variant {index}", 1)
        return re.sub(r"(\n\s+for [^\n]*\n)", rf"\g<1>        {name} += {index} % 7\n", block,
                      count=1)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def one_run(code: Path, task: Path, run_dir: Path, url: str, generations: int,
            extra: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    completed = subprocess.run(
        [sys.executable, "-c", RUNNER, str(task), str(run_dir), url, str(generations), *extra],
        env=env, capture_output=True, text=True, timeout=1800, cwd=run_dir.parent, check=False)
    line = next((ln for ln in completed.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if completed.returncode != 0 or line is None:
        raise RuntimeError(f"run failed ({code}): {completed.stderr[-3000:]}")
    return json.loads(line[len("RESULT "):])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True, help="the earlier Cambrian tree")
    parser.add_argument("--old-label", default=None,
                        help="what the old tree is (default: its commit)")
    parser.add_argument("--new", type=Path, default=ROOT,
                        help="the tree to measure as new (default: this checkout)")
    parser.add_argument("--generations", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--delay", type=float, default=1.0,
                        help="seconds the stand-in model takes per call (default 1.0)")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.old,
                            capture_output=True, text=True, check=False).stdout.strip()
    here = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.new,
                          capture_output=True, text=True, check=False).stdout.strip()
    variants = [(args.old_label or f"old code ({commit}), defaults", args.old, []),
                (f"new code ({here}), defaults", args.new, []),
                (f"new code ({here}), judge always", args.new, ["novelty.judge_when=always"]),
                (f"new code ({here}), novelty off", args.new, ["novelty.enabled=false"])]
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    results: dict[str, list[dict]] = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        task = root / "task"
        task.mkdir()
        (task / "initial.py").write_text(INITIAL)
        (task / "evaluate.py").write_text(EVALUATOR)
        for round_ in range(args.rounds):
            for number, (name, code, extra) in enumerate(variants):
                with InstantServer(StandIn(), delay_s=args.delay) as server:
                    results[name].append(one_run(code, task, root / f"run-{round_}-{number}",
                                                 server.base_url, args.generations, extra))
                print(f"#   round {round_ + 1} {name}: done, load {load()}", flush=True)
    print(f"{args.generations} generations, stand-in LLM ({args.delay:g} s a call; 5 kinds of "
          "edit in turn; judge SAME unless lines are added), bundled MiniLM embeddings; medians "
          f"of {args.rounds} interleaved rounds")
    for name, runs in results.items():
        purposes = sorted({p for r in runs for p in r["calls"]})
        calls = {p: statistics.median(r["calls"].get(p, 0) for r in runs) for p in purposes}
        refused = statistics.median(r["status"].get("rejected", 0) for r in runs)
        children = statistics.median(r["status"].get("correct", 0)
                                     + r["status"].get("incorrect", 0) for r in runs)
        print(f"  {name:<34} children {children:3.0f}  LLM calls "
              f"{statistics.median(sum(r['calls'].values()) for r in runs):4.0f} ("
              + ", ".join(f"{p} {c:.0f}" for p, c in calls.items())
              + f"), judge calls {calls.get('novelty', 0):3.0f}, refused by novelty "
              f"{refused:3.0f}, peak memory "
              f"{statistics.median(r['maxrss_mb'] for r in runs):5.0f} MB, wall "
              f"{statistics.median(r['wall_s'] for r in runs):5.1f} s")
        decided = sorted({d for r in runs for d in r.get("decided", {})})
        if decided:
            print(f"  {'':<34} novelty checks decided by (per run): " + "; ".join(
                f"{d} {', '.join(str(r.get('decided', {}).get(d, 0)) for r in runs)}"
                for d in decided))
        medians = [statistics.median(r["evaluation_s"]) for r in runs if r.get("evaluation_s")]
        if medians:
            print(f"  {'':<34} median evaluation (per run): "
                  + ", ".join(f"{m:.3f} s" for m in medians))
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
