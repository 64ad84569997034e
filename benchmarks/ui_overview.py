"""How fast the web UI answers for a large run: a 10,000-candidate store, served by the real
server (uvicorn on loopback), each page requested several times: the overview, its series and
further plots, the tree, the "doing now" panel and its LLM transport series, and the program
browser (its first page, sorted by score, filtered by status and island on a later page, a text
search, a failure reason).

  .venv/bin/python benchmarks/ui_overview.py [--sizes 10000,50000] [--repeats 7]
  .venv/bin/python benchmarks/ui_overview.py --old TREE [--sizes 100000,1000000] [--runs DIR]

``--old TREE`` (an earlier tree: ``git worktree add --detach /tmp/old COMMIT``) times the overview
as a browser loads it, old code and this checkout in the same run: each code serves the store
from a fresh process (``PYTHONPATH``), which answers the page and every request its scripts
make (the series, the further plots, the LLM transport series), then the fragments and the
incremental series poll a live page makes. "first" is the first request of a fresh server (the
OS's file cache already warm), "again" the median of the next ones; "load" is the page plus its
three fetches. ``--new TREE``: the code to compare with it (default: this checkout). Printed
with each server's resident memory after starting and at its peak, and
the machine's load before and after. ``--runs DIR`` serves ``DIR/big-run`` built earlier by
``build`` (one store of the largest size is then enough), instead of building each size.

``--write-columns --runs DIR``: write the run's UI columns (``search/ui_columns.py``) as the run
does with each resume snapshot. ``--parts --columns``: also the same first load from them.

``--parts --runs DIR``: where a first load's time goes, each read model the overview and its
fetches compute timed alone (wall and CPU, in this process, this checkout's code), in the order
a first load computes them, each from the store as a fresh UI process finds it.

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
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
FILL_CHUNK = 20_000
PROMPT = "## Current program\n```python\n" + "x = 1\n" * 300 + "```\n"


def fill(store: Store, size: int, islands: int = 5) -> None:
    rng = random.Random(size)
    ids = [row.id for row in store.candidates.list()]
    generation = store.candidates.max_generation()
    source = ("# EVOLVE-BLOCK-START\nVALUE = {}\n# EVOLVE-BLOCK-END\n\n\n"
              "def run():\n    return VALUE\n")
    count = store.candidates.count()  # once: a COUNT per row made the fill quadratic
    while count < size:
        with store.transaction():  # in chunks, so that the write-ahead log stays small
            for _ in range(min(FILL_CHUNK, size - count)):
                count += 1
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
    parser.add_argument("--old", type=Path, default=None, help="an earlier tree to compare")
    parser.add_argument("--new", type=Path, default=ROOT,
                        help="the tree to compare it with (default: this checkout)")
    parser.add_argument("--runs", type=Path, default=None,
                        help="a folder holding big-run, built earlier (with --old)")
    parser.add_argument("--parts", action="store_true",
                        help="time each read model of a first load (with --runs)")
    parser.add_argument("--write-columns", action="store_true",
                        help="write the run's UI columns first, as the run does (with --runs)")
    parser.add_argument("--columns", action="store_true",
                        help="with --parts: also time the first load from the UI columns")
    args = parser.parse_args()
    if args.write_columns:
        write_columns(args.runs / "big-run")
        if not args.parts and args.old is None:
            return
    if args.parts:
        parts(args.runs / "big-run", args.columns)
        return
    for size in (int(s) for s in args.sizes.split(",")):
        if args.old is None:
            measure(size, args.repeats)
        elif args.runs is not None:
            compare(args.runs, args.old, args.new, args.repeats)
        else:
            with tempfile.TemporaryDirectory() as folder:
                began = time.perf_counter()
                runs = build(Path(folder), size)
                print(f"\nstore of {size:,} candidates built in "
                      f"{time.perf_counter() - began:.1f} s")
                compare(runs, args.old, args.new, args.repeats)


# ---------------------------------------------------------------- old code against new code

ROOT = Path(__file__).resolve().parent.parent
SERVE = """
import sys
from pathlib import Path
from cambrian.ui.server import BackgroundServer, build_server
server = BackgroundServer(build_server([Path(sys.argv[1])], port=0, read_only=True,
                                       token="bench")).start()
print(server.base, flush=True)
sys.stdin.read()
"""
PAGE = ("/runs/big-run", "/api/runs/big-run/series", "/api/runs/big-run/plots",
        "/api/runs/big-run/transport")
LIVE = ("/runs/big-run/panels", "/runs/big-run/panels?part=summary",
        "/runs/big-run/panels?part=now")


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def memory_mb(pid: int) -> tuple[float, float]:
    """(resident, peak resident) MB of a process."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text()
                  .splitlines() if ":" in line)
    return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)


def cpu_s(pid: int) -> float:
    """A process's CPU time so far (user + system), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve(code: Path, runs: Path) -> tuple[subprocess.Popen[str], str]:
    with tempfile.TemporaryDirectory() as cwd:  # not a checkout: it would shadow PYTHONPATH
        process = subprocess.Popen([sys.executable, "-c", SERVE, str(runs)], cwd=cwd,
                                   env={**os.environ, "PYTHONPATH": str(code)}, text=True,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert process.stdout is not None
        return process, process.stdout.readline().strip()


def first_and_again(client: httpx.Client, url: str, repeats: int) -> tuple[float, float, int]:
    began = time.perf_counter()
    response = client.get(url)
    first = time.perf_counter() - began
    response.raise_for_status()
    again = []
    for _ in range(repeats):
        began = time.perf_counter()
        client.get(url).raise_for_status()
        again.append(time.perf_counter() - began)
    return first, statistics.median(again), len(response.content)


def one_code(name: str, code: Path, runs: Path, repeats: int) -> dict[str, tuple[float, ...]]:
    process, base = serve(code, runs)
    started = memory_mb(process.pid)[0]
    found: dict[str, tuple[float, ...]] = {}
    first_cpu = 0.0
    try:
        with httpx.Client(timeout=600, headers={"Authorization": "Bearer bench"}) as client:
            for url in PAGE + LIVE:
                before = cpu_s(process.pid)
                began = time.perf_counter()
                client.get(base + url).raise_for_status()
                if url in PAGE:
                    first_cpu += cpu_s(process.pid) - before
                found[url] = (time.perf_counter() - began,
                              *first_and_again(client, base + url, repeats)[1:])
            last = client.get(base + PAGE[1]).json()["scores"]["id"][-1]
            poll = f"/api/runs/big-run/series?after={last}"
            found[poll] = first_and_again(client, base + poll, repeats)
        rss, peak = memory_mb(process.pid)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
    print(f"\n{name} code ({code}): resident memory {started:,.0f} MB after start, "
          f"{rss:,.0f} MB after the requests, peak {peak:,.0f} MB; load {load()}")
    print(f"{'request':<52} {'first':>9} {'again':>9} {'bytes':>11}")
    for url, (first, again, size) in found.items():
        print(f"GET {url:<48} {1000 * first:>7.0f}ms {1000 * again:>7.0f}ms {size:>11,}")
    for label, pick in (("first", 0), ("again", 1)):
        print(f"  the page and its three fetches ({label}): "
              f"{sum(found[u][pick] for u in PAGE):.3f} s")
    print(f"  the server's CPU for the page and its three fetches (first): {first_cpu:.2f} s")
    return found


def compare(runs: Path, old: Path, new: Path, repeats: int) -> None:
    store = Store.open(runs / "big-run", read_only=True)
    print(f"\n# {time.strftime('%H:%M:%S')} load: {load()}; store of "
          f"{store.candidates.count():,} candidates: "
          f"{store.candidates.count('correct', 'incorrect'):,} evaluated, "
          f"{store.candidates.count('patch_failed'):,} refused, "
          f"{store.contexts.count():,} LLM contexts, {store.events.last_id():,} events; "
          f"{(runs / 'big-run' / 'run.sqlite').stat().st_size / 2**20:,.0f} MB")
    store.close()
    results = {}
    for name, code in (("old", old), ("new", new)):
        results[name] = one_code(name, code, runs, repeats)
    print("\nnew / old:")
    for url in results["new"]:
        if url in results["old"]:
            old_first, old_again = results["old"][url][:2]
            new_first, new_again = results["new"][url][:2]
            print(f"  {url:<50} first {new_first / old_first:6.3f}x  "
                  f"again {new_again / old_again:6.3f}x")
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")


def parts(run_dir: Path, columns: bool = False) -> None:
    """Each read model of the overview's first load, timed alone (see the module's text)."""
    from cambrian.core.objective import Objective
    from cambrian.llm.health import transport_series
    from cambrian.ui import plots
    from cambrian.ui.best_code import best_code
    from cambrian.ui.cache import read_ledger
    from cambrian.ui.data import overview_panels, run_row
    from cambrian.ui.now import ledger_part, now_view
    from cambrian.ui.series import bandit_series, score_series

    store = Store.open(run_dir, read_only=True)
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}; {store.candidates.count():,} "
          f"candidates, {store.contexts.count():,} LLM contexts")
    print(f"{'read model':<44} {'wall':>8} {'CPU':>8}")
    total = [0.0, 0.0]

    def timed(name: str, compute: Any) -> Any:
        began, cpu = time.perf_counter(), time.process_time()
        value = compute()
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
        total[0] += wall
        total[1] += cpu
        print(f"  {name:<42} {wall:7.2f}s {cpu:7.2f}s", flush=True)
        return value

    ledger = timed("ledger log (every LLM call)", lambda: read_ledger(store))
    row = timed("run row (summary)", lambda: run_row(store, "big-run", run_dir, "cambrian", ledger))
    objective = Objective.of(row.direction)
    timed("  of the panels: failure reasons", lambda: store.views.failure_texts(240))
    timed("  of the panels: model outcomes", lambda: store.views.model_outcomes(objective))
    timed("  of the panels: island lines", lambda: store.views.island_lines(objective))
    timed("overview panels (all of them)", lambda: overview_panels(store, row, ledger))
    timed("doing now", lambda: now_view(store, ledger_part(store, ledger.failed)))
    timed("best code", lambda: best_code(store, row.direction))
    timed("score series", lambda: score_series(store, spend=ledger))
    timed("bandit series", lambda: bandit_series(store))
    start = plots.run_start(store)
    timed("plots: cost", lambda: plots.cost_series(ledger, start))
    timed("plots: rates", lambda: plots.rate_series(store, objective))
    timed("plots: occupancy", lambda: plots.occupancy_series(store, start))
    timed("plots: sizes", lambda: plots.size_series(store))
    timed("plots: Pareto", lambda: plots.pareto_series(store))
    timed("LLM transport (from the store)", lambda: transport_series(store))
    if hasattr(ledger, "transport_calls"):  # what the UI serves it from now
        from cambrian.llm.health import series_of
        timed("LLM transport (from the ledger log)",
              lambda: series_of(ledger.transport_calls()))
    print(f"  (the panels' parts are counted twice) {total[0]:7.2f}s {total[1]:7.2f}s")
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")
    if columns:
        column_parts(store, run_dir, timed, total)
    store.close()


def column_parts(store: Store, run_dir: Path, timed: Any, total: list[float]) -> None:
    """The same first load from the run's UI columns (``search/ui_columns.py``), as a fresh UI
    process computes it: the file read and checked, the rows after it read, each read model
    from the columns."""
    from cambrian.llm.health import series_of
    from cambrian.ui import plots
    from cambrian.ui.best_code import best_code
    from cambrian.ui.cache import ColumnFiles, LedgerLog
    from cambrian.ui.data import overview_panels, run_row
    from cambrian.ui.now import ledger_part, now_view
    from cambrian.ui.series import bandit_series, score_series

    total[:] = [0.0, 0.0]
    print("\nfrom the UI columns (the same read models)")
    columns = timed("UI columns: file read, checked, rows after", lambda: ColumnFiles().current(
        store))
    assert columns is not None, "no usable UI columns: write them first (--write-columns)"
    ledger = timed("ledger log (from the columns)", lambda: LedgerLog.of_columns(columns))
    row = timed("run row (summary)", lambda: run_row(store, "big-run", run_dir, "cambrian", ledger))
    timed("overview panels (all of them)", lambda: overview_panels(store, row, ledger, columns))
    timed("doing now", lambda: now_view(store, ledger_part(store, ledger.failed)))
    timed("best code", lambda: best_code(store, row.direction))
    timed("score series", lambda: score_series(store, spend=ledger, columns=columns))
    timed("bandit series", lambda: bandit_series(store))
    timed("plots (all of them)", lambda: plots.plot_data(store, None, ledger, columns))
    timed("LLM transport (from the ledger log)", lambda: series_of(ledger.transport_calls()))
    print(f"  (the first load, from the columns)       {total[0]:7.2f}s {total[1]:7.2f}s")
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}")


def write_columns(run_dir: Path) -> None:
    """The run's UI columns written by the code its checkpoints use (``UIColumnsHook``)."""
    from cambrian.search.ui_columns import UIColumnsHook

    store = Store.open(run_dir, read_only=True)
    began, cpu = time.perf_counter(), time.process_time()
    UIColumnsHook(store).checkpoint()
    print(f"# UI columns written in {time.perf_counter() - began:.1f} s "
          f"({time.process_time() - cpu:.1f} CPU-s): "
          f"{sum(p.stat().st_size for p in (run_dir / 'ui_columns').rglob('*')) / 2**20:,.0f} MB")
    store.close()


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
