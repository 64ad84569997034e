"""How well does a small local model drive evolution? Runs a task for a fixed number of LLM calls
and prints the figures issue #7 asks for:

  share of calls that produced an evaluable candidate, share of candidates that were correct,
  prompt / cached tokens per call, seconds per call, best score against evaluations.

  .venv/bin/python benchmarks/small_model.py --calls 40 [--model qwen2.5-coder-1.5b-instruct]

Figures are also written as JSON next to the run (``<run>/small_model.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from cambrian.api import start
from cambrian.store.store import Store


def measure(store: Store, wall_s: float) -> dict:
    calls = store.contexts.count()
    mutation_calls = store.contexts.count(purpose="mutation")
    rows = store.candidates.list()
    children = [r for r in rows if r.id != 1]
    # Evaluable: a new program that reached the evaluator. Novelty-rejected and duplicate
    # programs parsed fine but were never evaluated, so they do not count.
    evaluated = sorted((r for r in children if r.status in ("correct", "incorrect")), key=lambda r: r.id)
    by_status: dict[str, int] = {}
    for row in children:
        by_status[row.status] = by_status.get(row.status, 0) + 1
    correct = [r for r in evaluated if r.status == "correct"]
    contexts = store.contexts.list()
    tokens = (sum(c.prompt_tokens for c in contexts), sum(c.cached_tokens for c in contexts),
              sum(c.completion_tokens for c in contexts), sum(c.latency_s for c in contexts),
              sum(c.finish_reason == "length" for c in contexts))
    initial = store.candidates.get(1).score
    sign = 1.0 if store.runs.info().direction == "maximize" else -1.0
    best, curve = initial, []
    for index, row in enumerate(evaluated, start=1):
        if row.status == "correct" and row.score is not None and (
                best is None or sign * row.score > sign * best):
            best = row.score
        curve.append((index, best))
    failures: dict[str, int] = {}
    for row in children:
        if row.status == "patch_failed":
            key = row.error.split(":")[0][:60]
            failures[key] = failures.get(key, 0) + 1
    return {
        "llm_calls": calls,
        "mutation_calls": mutation_calls,
        "evaluable_per_call": len(evaluated) / calls if calls else None,
        "evaluable_per_mutation_call": len(evaluated) / mutation_calls if mutation_calls else None,
        "children_by_status": by_status,
        "correct_per_evaluated": len(correct) / len(evaluated) if evaluated else None,
        "evaluated": len(evaluated),
        "prompt_tokens_per_call": tokens[0] / calls if calls else None,
        "cached_tokens_per_call": tokens[1] / calls if calls else None,
        "completion_tokens_per_call": tokens[2] / calls if calls else None,
        "seconds_per_call": tokens[3] / calls if calls else None,
        "truncated_replies": int(tokens[4] or 0),
        "initial_score": initial,
        "best_score": best,
        "best_vs_evaluations": curve,
        "wall_seconds": wall_s,
        "failure_reasons": dict(sorted(failures.items(), key=lambda kv: -kv[1])),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="examples/circle_packing")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run-dir", default=None)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()

    run_dir = Path(args.run_dir or f"runs/small_model-{time.strftime('%Y%m%d-%H%M%S')}")
    overrides = [
        f"budget.max_llm_calls={args.calls}",
        f"evolution.generations={args.calls}",
        f"evolution.seed={args.seed}",
        "llm.models=[" + json.dumps({"provider": "local", "model": args.model}) + "]",
        # What the LLM's proposals achieve: the LLM-free tune step (on in the example's config)
        # would add children no call produced. `--set trace_feedback.tune_operator=true` adds it.
        "trace_feedback.tune_operator=false",
        *args.overrides,
    ]
    evolution = start(args.task, overrides=overrides, run_dir=run_dir)
    began = time.monotonic()
    try:
        summary = asyncio.run(evolution.run())
    finally:
        evolution.store.close()
    store = Store.open(run_dir)
    figures = measure(store, time.monotonic() - began)
    figures.update(model=args.model, task=args.task, seed=args.seed, stop_reason=summary.stop_reason,
                   overrides=args.overrides)
    (run_dir / "small_model.json").write_text(json.dumps(figures, indent=2))

    pct = lambda v: "—" if v is None else f"{100 * v:.0f}%"
    num = lambda v: "—" if v is None else f"{v:.1f}"
    print(f"model {args.model}, task {args.task}, {figures['llm_calls']} LLM calls, seed {args.seed}")
    print(f"  LLM calls (of them mutation calls)     : {figures['llm_calls']} "
          f"({figures['mutation_calls']})")
    print(f"  calls producing an evaluable candidate : {pct(figures['evaluable_per_call'])} "
          f"(per mutation call: {pct(figures['evaluable_per_mutation_call'])})")
    print(f"  children by status                     : {figures['children_by_status']}")
    print(f"  evaluated candidates that were correct : {pct(figures['correct_per_evaluated'])} "
          f"of {figures['evaluated']}")
    print(f"  prompt tokens per call                 : {num(figures['prompt_tokens_per_call'])}")
    print(f"  cache-hit prompt tokens per call       : {num(figures['cached_tokens_per_call'])}")
    print(f"  completion tokens per call             : {num(figures['completion_tokens_per_call'])}")
    print(f"  seconds per call                       : {num(figures['seconds_per_call'])}")
    print(f"  replies cut at the token limit         : {figures['truncated_replies']}")
    print(f"  initial score -> best score            : {figures['initial_score']} -> {figures['best_score']}")
    print("  best score after n evaluations         : " + ", ".join(
        f"{n}:{b:.4f}" for n, b in figures["best_vs_evaluations"] if b is not None))
    print(f"  refused replies by reason              : {figures['failure_reasons']}")
    print(f"  run directory                          : {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
