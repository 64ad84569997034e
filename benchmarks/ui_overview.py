"""How fast the web UI answers for a large run: a 10,000-candidate store, served by the real
server (uvicorn on loopback), each page requested several times: the overview, its series and
further plots, the tree, the "doing now" panel and its LLM transport series, and the program
browser (its first page, sorted by score, filtered by status and island on a later page, a text
search, a failure reason).

  .venv/bin/python benchmarks/ui_overview.py [--sizes 10000,50000] [--repeats 7]

The store is made by one real session (instant in-process LLM and evaluator, as in
``overhead.py``), then filled through the store's API up to the size asked: evaluated children
in a random tree over 5 islands (10% incorrect), as many refused replies (``patch_failed``), one
LLM context per proposal (a 2 kB prompt), and a ``evaluated`` and a ``bandit`` event per
evaluation; each proposal has one of four intents. Printed: the median and the slowest response time of each request, and its size.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from overhead import InstantEvaluator, InstantLLM, overrides, write_task

from cambrian.api import start
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.events import BanditSnapshot, CandidateEvaluated
from cambrian.store.rows import NewCandidate, NewContext
from cambrian.store.store import Store
from cambrian.ui.server import BackgroundServer, build_server

INTENTS = ("refinement", "local_fix", "strategy", "tuning")
PROMPT = "## Current program\n```python\n" + "x = 1\n" * 300 + "```\n"


def fill(store: Store, size: int, islands: int = 5) -> None:
    rng = random.Random(size)
    ids = [row.id for row in store.candidates.list()]
    generation = store.candidates.max_generation()
    source = ("# EVOLVE-BLOCK-START\nVALUE = {}\n# EVOLVE-BLOCK-END\n\n\n"
              "def run():\n    return VALUE\n")
    with store.transaction():
        while store.candidates.count() < size:
            parent = rng.choice(ids)
            generation += 1
            context = store.contexts.add(NewContext(
                purpose="mutation", model="instant", provider="openai", params={},
                messages=[{"role": "user", "content": PROMPT}], response_text="VALUE = 2",
                prompt_tokens=500, completion_tokens=30, cost_usd=0.0004, latency_s=0.1))
            if rng.random() < 0.5:  # a refused reply: half of all proposals, as with small models
                store.candidates.add(NewCandidate(
                    generation=generation, island=rng.randrange(islands), parent_id=parent,
                    operator="diff", status="patch_failed", language="python", model="instant",
                    context_id=context, notes={"intent": rng.choice(INTENTS)},
                    error=f"no SEARCH/REPLACE edit found (attempt {generation})"))
                continue
            correct = rng.random() < 0.9
            score = rng.random() if correct else None
            candidate = store.candidates.add(NewCandidate(
                generation=generation, island=rng.randrange(islands), parent_id=parent,
                operator="diff", status="pending", language="python", model="instant",
                context_id=context, source=source.format(generation),
                notes={"format": "diff", "arm": "instant@0.7",
                       "intent": rng.choice(INTENTS)}))
            store.evaluations.add(candidate, EvaluationResult(
                status="ok" if correct else "incorrect", combined_score=score,
                public={"value": generation}, error="" if correct else "VALUE too large",
                duration_s=0.01))
            store.candidates.update(candidate, status="correct" if correct else "incorrect",
                                    score=score, error=None if correct else "VALUE too large")
            store.lineage.add_edge(parent, candidate, "parent", "diff")
            store.events.add(CandidateEvaluated(candidate_id=candidate, status="ok", score=score,
                                                best_score=None, evaluated=len(ids),
                                                generations=size))
            store.events.add(BanditSnapshot(pulls=len(ids), shares={"instant@0.7": 1.0}))
            ids.append(candidate)
        store.state.delete("archive_snapshot")


def build(workdir: Path, size: int) -> Path:
    task = write_task(workdir / "task")
    evolution = start(task, run_dir=workdir / "runs" / "big-run", overrides=overrides(1),
                      providers={"instant": InstantLLM()})
    evolution.evaluator = InstantEvaluator()
    asyncio.run(evolution.run())
    fill(evolution.store, size)
    evolution.store.close()
    return workdir / "runs"


def timed(client: httpx.Client, url: str, repeats: int) -> tuple[float, float, int]:
    client.get(url).raise_for_status()  # warm: imports, templates, the OS page cache
    times, size = [], 0
    for _ in range(repeats):
        began = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - began)
        response.raise_for_status()
        size = len(response.content)
    return statistics.median(times), max(times), size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,50000", help="candidates per store")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        measure(size, args.repeats)


def measure(size: int, repeats: int) -> None:
    print("# machine load (1, 5, 15 min): " + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    with tempfile.TemporaryDirectory() as folder:
        began = time.perf_counter()
        runs = build(Path(folder), size)
        print(f"\nstore of {size:,} candidates built in {time.perf_counter() - began:.1f} s")
        store = Store.open(runs / "big-run", read_only=True)
        print(f"  {store.candidates.count('correct', 'incorrect'):,} evaluated, "
              f"{store.candidates.count('patch_failed'):,} refused, "
              f"{store.contexts.count():,} LLM contexts, {store.events.last_id():,} events")
        store.close()
        server = BackgroundServer(build_server([runs], port=0, read_only=True)).start()
        base = server.base
        print(f"{'request':<62} {'median':>9} {'slowest':>9} {'bytes':>10}")
        with httpx.Client(timeout=60,
                          headers={"Authorization": f"Bearer {server.token}"}) as client:
            for url in ("/api/runs/big-run/overview", "/runs/big-run", "/runs/big-run/panels",
                        "/api/runs/big-run/series", "/api/runs/big-run/tree",
                        "/api/runs/big-run/tree?all=1", "/", "/api/runs/big-run/plots",
                        "/runs/big-run/programs", "/runs/big-run/programs?sort=score",
                        "/runs/big-run/programs?status=incorrect&island=2&page=3",
                        "/runs/big-run/programs?q=VALUE+too",
                        "/runs/big-run/programs?reason=VALUE+too+large&sort=generation",
                        "/api/runs/big-run/programs?intent=strategy&sort=score",
                        "/runs/big-run/panels?part=now", "/api/runs/big-run/transport"):
                median, slowest, length = timed(client, base + url, repeats)
                print(f"GET {url:<58} {1000 * median:>7.0f}ms {1000 * slowest:>7.0f}ms "
                      f"{length:>10,}")
        server.stop()


if __name__ == "__main__":
    main()
