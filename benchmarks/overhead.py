"""The evolution loop's own cost, with the LLM and the evaluator taken out.

  .venv/bin/python benchmarks/overhead.py [--sizes 100,10000,100000] [--generations 30]
                                           [--novelty-size 100000] [--no-utilisation]
                                           [--old TREE]

  The million-program archive: --sizes 1000000 --novelty-size 1000 --no-utilisation --old TREE
  (``--novelty-size 1000000`` adds the novelty index at that size; it needs ~8 GB)
  A resume with novelty on: --novelty-resume --sizes 1000000 --old TREE [--cache DIR]

``--old TREE``: an earlier Cambrian tree (``git worktree add --detach TREE COMMIT``), measured
by this same benchmark before this checkout at each size, each in a process of its own.

1. Loop cost per generation with archives of 100, 10,000 and 100,000 stored programs: the real
   engine and store, an in-process LLM that answers a SEARCH/REPLACE edit instantly and an
   evaluator that scores instantly, so what remains is selection, prompt building, patching,
   duplicate checks and the SQLite commits; wall and CPU time (the process's user + system, all
   threads: on a shared machine the CPU time is the figure that does not depend on the load).
   A store is prefilled behind the engine's back, so the first session resumes by replaying
   every stored evaluation through the selector; code with the resume snapshot writes one when
   that session ends (timed apart, not in the per-generation figure) and runs a second session
   resumed from it. Each resume is printed as open (the store, the loop's parts) + archive.
2. Evaluation-worker utilisation: the share of time the evaluation slots are busy, in a run where
   proposals are slower than evaluations and in one where they are faster; over the whole run
   (the initial program is evaluated alone, and the last evaluations drain) and in the steady
   state (from the end of the initial program's evaluation to the start of the last child's).
3. Novelty index (``cambrian/search/novelty.py``) with 100,000 stored embeddings (random unit
   384-d float32 vectors, the bundled embedder's size) on one island, the worst case: the time of
   one nearest-neighbour lookup, of building the index vector by vector, and of restoring it from
   a real run store on resume.

4. ``--novelty-resume`` (instead of 1-3): a resume with novelty on. A run folder of ``size``
   evaluated programs, each with an embedding (random unit vectors stored under the bundled
   embedder's name, on the run's two islands), is built once (``--cache DIR`` keeps it between
   runs; built by the ``--old`` tree when one is given, as a newer store is not opened by older
   code) and copied for each tree; in a process of its own each tree resumes it twice without
   running a generation: the first resume replays the archive and rebuilds the novelty index
   from the store (and writes the resume snapshot, and with this checkout the index's files, as
   its session ends), the second loads the snapshot and rebuilds the index (the old code: from
   every stored embedding; this checkout: from the files). Each resume is printed as open +
   archive + novelty index, wall and CPU, with the process's resident memory after it.

No LLM and no embedding model runs: the LLM answers instantly in-process, vectors are random.

Figures are wall-clock on whatever machine runs this; compare them as ratios within one run.
The machine's load is printed before and after each part, and the process's resident memory
(current and peak) after each.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cambrian.api import resume, start
from cambrian.config import NoveltyConfig
from cambrian.core.evaluation import EvaluationResult
from cambrian.llm.base import LLMRequest, LLMResponse, Usage, estimate_tokens
from cambrian.search.novelty import NoveltyFilter, SimilarityIndex
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
TASK_INITIAL = "# EVOLVE-BLOCK-START\nVALUE = 1\n# EVOLVE-BLOCK-END\n\n\ndef run():\n    return VALUE\n"
TASK_EVALUATOR = "def evaluate(program_path):\n    return {'combined_score': 0.0}\n"


class InstantLLM:
    """Answers every mutation prompt at once with an edit that raises VALUE to a fresh number."""

    def __init__(self, delay_s: float = 0.0, counter: int = 10_000_000) -> None:
        self.delay_s = delay_s
        self.counter = counter  # each session its own numbers: no child repeats an earlier one

    @property
    def model(self) -> str:
        return "instant"

    @property
    def context_window(self) -> int | None:
        return 32768

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        prompt = request.messages[-1].content
        current = prompt.split("VALUE = ", 1)[1].split("\n", 1)[0] if "VALUE = " in prompt else "1"
        self.counter += 1
        text = (f"Raise VALUE\n<<<<<<< SEARCH\nVALUE = {current}\n=======\n"
                f"VALUE = {self.counter}\n>>>>>>> REPLACE\n")
        return LLMResponse(text=text, model="instant", usage=Usage(len(prompt) // 4, 20),
                           finish_reason="stop", latency_s=self.delay_s)


class InstantEvaluator:
    """Scores VALUE; optionally sleeps to stand for a slow evaluation. Records when each
    evaluation ran."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.busy_s = 0.0
        self.spans: list[tuple[float, float]] = []  # (start, end) of each evaluation

    async def evaluate(self, source: str, work_dir: Path) -> EvaluationResult:
        began = time.perf_counter()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        value = int(source.split("VALUE = ", 1)[1].split("\n", 1)[0])
        self.busy_s += time.perf_counter() - began
        self.spans.append((began, time.perf_counter()))
        return EvaluationResult(status="ok", combined_score=float(value % 9973),
                                public={"value": value})


def write_task(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "initial.py").write_text(TASK_INITIAL)
    (root / "evaluate.py").write_text(TASK_EVALUATOR)
    return root


def prefill(store: Store, size: int, islands: int) -> None:
    """Evaluated programs in a random tree, written straight into the store, until it holds
    ``size`` of them (the first session already stored a few)."""
    rng = random.Random(size)
    ids = [row.id for row in store.candidates.list()]
    generation = store.candidates.max_generation()
    with store.transaction():
        for _ in range(size - store.candidates.count("correct", "incorrect")):
            parent = rng.choice(ids)
            generation += 1
            score = rng.random()
            source = TASK_INITIAL.replace("VALUE = 1", f"VALUE = {20_000_000 + generation}")
            candidate_id = store.candidates.add(NewCandidate(
                generation=generation, island=rng.randrange(islands), parent_id=parent,
                operator="diff", status="correct", language="python", source=source))
            store.evaluations.add(candidate_id, EvaluationResult(
                status="ok", combined_score=score, public={"value": generation}))
            store.candidates.update(candidate_id, status="correct", score=score)
            store.lineage.add_edge(parent, candidate_id, "parent", "diff")
            ids.append(candidate_id)
        # Rows written behind the engine's back: the archive snapshot of the first session no
        # longer describes the store (resume would rightly report a mismatch).
        store.state.delete("archive_snapshot")
        if hasattr(store, "resume_snapshot"):  # nor does the resume snapshot (older code has none)
            store.resume_snapshot.delete()


def overrides(generations: int, parallel: int = 2) -> list[str]:
    return [f"evolution.generations={generations}", "novelty.enabled=false", "meta.enabled=false",
            f"evolution.max_parallel_evaluations={parallel}", "evolution.patch_types=[diff]",
            "evolution.patch_type_probs=[1.0]",
            'llm.models=[{"provider": "openai", "model": "instant", "base_url": "http://127.0.0.1:9/v1"}]']


class SnapshotWrites:
    """Times the resume snapshots the loop writes (this checkout's code; older code has none)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.cpu_seconds: list[float] = []
        self.module = None
        try:
            from cambrian.search import resume_snapshot
        except ImportError:
            return
        self.module, write = resume_snapshot, resume_snapshot.write

        def timed(*args: object) -> bool:
            began, cpu = time.perf_counter(), time.process_time()
            try:
                return write(*args)
            finally:
                self.seconds.append(time.perf_counter() - began)
                self.cpu_seconds.append(time.process_time() - cpu)

        resume_snapshot.write = timed

    def take(self) -> tuple[float, float]:
        """(wall, CPU) seconds of the snapshots written since the last call."""
        total, cpu = sum(self.seconds), sum(self.cpu_seconds)
        self.seconds, self.cpu_seconds = [], []
        return total, cpu


def _session(run_dir: Path, generations: int, writes: SnapshotWrites,
             number: int) -> dict[str, float]:
    """Resume the run, rebuild its archive, run ``generations`` more; the times of each."""
    def evaluated() -> int:
        store = Store.open(run_dir)
        count = store.candidates.count("correct", "incorrect")
        store.close()
        return count

    before = evaluated()
    began, resume_cpu = time.perf_counter(), time.process_time()
    resumed = resume(run_dir, overrides=[f"evolution.generations={before + generations}"],
                     providers={"instant": InstantLLM(counter=11_000_000 + 1_000_000 * number)})
    open_s = time.perf_counter() - began  # open the store, build the loop's parts
    resumed.evaluator = InstantEvaluator()
    began = time.perf_counter()
    resumed.restore()  # run() rebuilds the archive first: a replay, or a snapshot and its tail
    rebuild_s = time.perf_counter() - began
    resume_cpu = time.process_time() - resume_cpu
    writes.take()
    began, cpu = time.perf_counter(), time.process_time()
    asyncio.run(resumed.run())
    loop_s, loop_cpu = time.perf_counter() - began, time.process_time() - cpu
    resumed.store.close()
    snapshot_s, snapshot_cpu = writes.take()  # the snapshot written when the session ended
    ran = evaluated() - before
    return {"open_s": open_s, "rebuild_s": rebuild_s, "resume_s": open_s + rebuild_s,
            "resume_cpu_s": resume_cpu,
            "generations": ran, "ms_per_generation": 1000 * (loop_s - snapshot_s) / ran,
            "cpu_ms_per_generation": 1000 * (loop_cpu - snapshot_cpu) / ran,
            "snapshot_write_s": snapshot_s}  # written after the loop's last generation


def loop_cost(size: int, generations: int, workdir: Path) -> dict[str, object]:
    """A store of ``size`` evaluated programs; resumed once with its archive replayed from the
    store (the prefill wrote rows behind the engine's back, so no snapshot describes them),
    then, with this checkout's code, resumed again from the snapshot the first session wrote."""
    writes = SnapshotWrites()
    task = write_task(workdir / f"task{size}")
    run_dir = workdir / f"run{size}"
    evolution = start(task, run_dir=run_dir, overrides=overrides(1),
                      providers={"instant": InstantLLM()})
    evolution.evaluator = InstantEvaluator()
    asyncio.run(evolution.run())  # evaluates the initial program and one child
    began = time.perf_counter()
    prefill(evolution.store, size, evolution.config.database.num_islands)
    prefill_s = time.perf_counter() - began
    evolution.store.close()
    sessions = [_session(run_dir, generations, writes, 0)]
    if writes.module is not None:
        sessions.append(_session(run_dir, generations, writes, 1))
    gc.collect()
    return {"archive": size, "prefill_s": prefill_s, "sessions": sessions,
            "store_mb": sum(f.stat().st_size for f in run_dir.glob("run.sqlite*")) / 2**20,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def loop_cost_in(code: Path, size: int, generations: int, workdir: Path) -> dict[str, object]:
    """``loop_cost`` (this benchmark's) run with the Cambrian tree at ``code`` first on the path,
    in a process of its own: its figures and its peak memory. A tree without the resume
    snapshot runs one session (archive replayed)."""
    result = in_process(code, f"loop_cost({size}, {generations}, Path({str(workdir)!r}))",
                        workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    return result


def print_loop_cost(name: str, c: dict) -> None:
    labels = ["archive replayed", "from the resume snapshot"]
    for label, s in zip(labels, c["sessions"]):
        print(f"  {name} archive {c['archive']:>9,}: {s['ms_per_generation']:6.1f} ms/generation "
              f"({s['cpu_ms_per_generation']:.1f} CPU-ms); "
              f"resume ({label}) {s['resume_s']:6.2f} s (open {s['open_s']:.2f} s + archive "
              f"{s['rebuild_s']:.2f} s; {s['resume_cpu_s']:.2f} CPU-s); snapshot written at the session's end "
              f"{s['snapshot_write_s']:.2f} s")
    print(f"  {name} archive {c['archive']:>9,}: peak memory {c['peak_mb']:,.0f} MB; store "
          f"{c['store_mb']:,.0f} MB, prefilled in {c['prefill_s']:.0f} s")


def utilisation(llm_delay: float, eval_delay: float, generations: int, workdir: Path,
                name: str) -> dict[str, float]:
    task = write_task(workdir / f"task-{name}")
    parallel = 2
    evaluator = InstantEvaluator(eval_delay)
    evolution = start(task, run_dir=workdir / f"run-{name}", overrides=overrides(generations, parallel),
                      providers={"instant": InstantLLM(llm_delay)})
    evolution.evaluator = evaluator
    began = time.perf_counter()
    asyncio.run(evolution.run())
    wall = time.perf_counter() - began
    evolution.store.close()
    # Steady state: from the end of the initial program's evaluation (it runs alone, before
    # any proposal) to the start of the last child's (after it nothing is left to start).
    spans = sorted(evaluator.spans)
    window = (spans[0][1], spans[-1][0]) if len(spans) > 2 else (0.0, 0.0)
    busy = sum(max(0.0, min(end, window[1]) - max(start, window[0])) for start, end in spans[1:])
    steady = busy / ((window[1] - window[0]) * parallel) if window[1] > window[0] else 0.0
    return {"case": name, "llm_s": llm_delay, "eval_s": eval_delay,
            "worker_busy_share": evaluator.busy_s / (wall * parallel),
            "steady_busy_share": steady, "wall_s": wall}


class StoredVectors:
    """The embedder a restored index names; it embeds nothing (vectors are in the store)."""

    name = "benchmark/random-384"

    async def embed(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("the benchmark never embeds")


def unit_vectors(count: int, rng: np.random.Generator, dim: int = 384) -> np.ndarray:
    vectors = rng.standard_normal((count, dim), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def novelty_cost(count: int, workdir: Path, lookups: int = 200) -> dict[str, float]:
    """Nearest-neighbour lookup, index build and index restore with ``count`` embeddings."""
    rng = np.random.default_rng(0)
    vectors = unit_vectors(count, rng)
    began = time.perf_counter()
    index = SimilarityIndex()
    for candidate_id, vector in enumerate(vectors, start=1):
        index.add(0, candidate_id, vector)
    build_s = time.perf_counter() - began
    # Near-copies of stored programs (cosine about 0.98 to their source): the lookup is exact,
    # so each must find its source; the timing is per lookup (median and 90th percentile).
    sources = rng.choice(count, lookups, replace=False)
    times, found = [], 0
    for source in sources:
        query = vectors[source] + 0.01 * rng.standard_normal(vectors.shape[1])
        query = (query / np.linalg.norm(query)).astype(np.float32)
        began = time.perf_counter()
        nearest = index.nearest(0, query, at_least=0.95)  # as the filter asks (judge threshold)
        times.append(time.perf_counter() - began)
        found += nearest is not None and nearest[1] == int(source) + 1
    lookup_ms = 1000 * float(np.median(times))
    lookup_p90_ms = 1000 * float(np.percentile(times, 90))
    del index  # the restore below builds its own: one index in memory at a time

    store = Store.open(workdir / "novelty", create=True)
    with store.transaction():
        for vector in vectors:
            candidate_id = store.candidates.add(NewCandidate(
                generation=0, island=0, parent_id=None, operator="diff", status="correct",
                language="python"))
            store.embeddings.add(candidate_id, StoredVectors.name, vector)
    novelty = NoveltyFilter(NoveltyConfig(judge=False), StoredVectors(), Recorder(store),
                            num_islands=1)
    began = time.perf_counter()
    novelty.restore()
    restore_s = time.perf_counter() - began
    store.close()
    assert len(novelty.index) == count
    return {"embeddings": count, "lookup_ms": lookup_ms, "lookup_p90_ms": lookup_p90_ms,
            "recall": found / lookups, "build_s": build_s, "restore_s": restore_s}


# ---------------------------------------------------------------- resume with novelty on

def novelty_overrides(generations: int) -> list[str]:
    return [x for x in overrides(generations) if not x.startswith("novelty.")] + [
        "novelty.enabled=true", "novelty.judge=false"]


def prefill_embeddings(store: Store, model: str, chunk: int = 20_000) -> None:
    """A random unit vector (384-d) for every candidate without one, as the bundled embedder
    names its vectors."""
    rng = np.random.default_rng(7)
    have = set(store.embeddings.ids())  # candidate ids run from 1 up, none deleted
    missing = [i for i in range(1, store.resume_snapshot.last_candidate_id() + 1)
               if i not in have]
    for start_at in range(0, len(missing), chunk):
        part = missing[start_at:start_at + chunk]
        vectors = unit_vectors(len(part), rng)
        with store.transaction():
            for candidate_id, vector in zip(part, vectors):
                store.embeddings.add(candidate_id, model, vector)


def build_novelty_run(size: int, folder: Path) -> dict[str, float]:
    """A run folder with novelty on and ``size`` evaluated programs, each embedded."""
    from cambrian.llm.embeddings import LocalEmbedder

    task = write_task(folder / "task")
    evolution = start(task, run_dir=folder / "run", overrides=novelty_overrides(1),
                      providers={"instant": InstantLLM()})
    evolution.evaluator = InstantEvaluator()
    asyncio.run(evolution.run())
    began = time.perf_counter()
    prefill(evolution.store, size, evolution.config.database.num_islands)
    prefill_embeddings(evolution.store, LocalEmbedder.name)
    evolution.store.close()
    return {"prefill_s": time.perf_counter() - began}


class Timed:
    """Wall and CPU seconds of a method's calls, patched on its class."""

    def __init__(self, owner: type, name: str) -> None:
        self.wall, self.cpu = 0.0, 0.0
        original = getattr(owner, name, None)
        if original is None:  # older code has no such method
            return

        def timed(*args: object, **kwargs: object) -> object:
            began, cpu = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.wall += time.perf_counter() - began
                self.cpu += time.process_time() - cpu

        setattr(owner, name, timed)

    def take(self) -> tuple[float, float]:
        taken = (self.wall, self.cpu)
        self.wall, self.cpu = 0.0, 0.0
        return taken


def novelty_resume(run_dir: Path) -> dict[str, object]:
    """Two resumes of the run with novelty on (see the module's text), no generation run."""
    from cambrian.search.novelty import NoveltyFilter

    index_restore = Timed(NoveltyFilter, "restore")
    index_write = Timed(NoveltyFilter, "save_index")  # this checkout's index files
    writes = SnapshotWrites()
    sessions = []
    migrated_s = 0.0
    for number in range(2):
        began = time.perf_counter()
        store = Store.open(run_dir)  # the first open brings an older store to this schema
        migrated_s = migrated_s or time.perf_counter() - began
        evaluated = store.candidates.count("correct", "incorrect")
        store.close()
        gc.collect()
        began, cpu = time.perf_counter(), time.process_time()
        resumed = resume(run_dir, overrides=[f"evolution.generations={evaluated}"],
                         providers={"instant": InstantLLM(counter=11_000_000)})
        open_s, open_cpu = time.perf_counter() - began, time.process_time() - cpu
        resumed.evaluator = InstantEvaluator()
        began, cpu = time.perf_counter(), time.process_time()
        resumed.restore()
        restore_s, restore_cpu = time.perf_counter() - began, time.process_time() - cpu
        index_s, index_cpu = index_restore.take()
        resident = current_mb()
        novelty = resumed.hook("novelty").filter
        session = {"open_s": open_s, "open_cpu_s": open_cpu,
                   "archive_s": restore_s - index_s, "archive_cpu_s": restore_cpu - index_cpu,
                   "index_s": index_s, "index_cpu_s": index_cpu,
                   "resume_s": open_s + restore_s, "resume_cpu_s": open_cpu + restore_cpu,
                   "resident_mb": resident, "index_rows": len(novelty.index),
                   "index_from_files": getattr(novelty, "loaded_rows", 0)}
        asyncio.run(novelty.embedder.embed(["x = 1"]))  # the model loaded in the background
        session.update(lookups(novelty.index, novelty.threshold, evaluated))  # is not timed
        writes.take()
        asyncio.run(resumed.run())  # the budget is spent: the session ends, writing for the next
        resumed.store.close()
        session["snapshot_write_s"] = writes.take()[0]
        session["index_write_s"] = index_write.take()[0]
        sessions.append(session)
        del resumed, novelty
    return {"evaluated": evaluated, "sessions": sessions, "first_open_s": migrated_s,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def lookups(index: SimilarityIndex, threshold: float, last: int,
            count: int = 200) -> dict[str, float]:
    """Near-copies (cosine about 0.98) of ``count`` stored programs looked up on their island
    right after the resume, as the filter asks: each must find its source."""
    rng = np.random.default_rng(11)
    times, cpu_times, found = [], [], 0
    for source in rng.integers(2, last, count):
        vector = index.vector(int(source))
        if vector is None:
            continue
        island = next(i for i in index.islands() if index.contains(i, int(source)))
        query = vector + 0.01 * rng.standard_normal(vector.shape[0]).astype(np.float32)
        query = (query / np.linalg.norm(query)).astype(np.float32)
        began, cpu = time.perf_counter(), time.thread_time()
        nearest = index.nearest(island, query, at_least=min(threshold, 0.95))
        times.append(time.perf_counter() - began)
        cpu_times.append(time.thread_time() - cpu)
        found += nearest is not None and nearest[1] == int(source)
    return {"lookups": len(times), "lookup_ms": 1000 * float(np.median(times)),
            "lookup_p90_ms": 1000 * float(np.percentile(times, 90)),
            "lookup_cpu_ms": 1000 * float(np.median(cpu_times)), "found": found}


def in_process(code: Path, call: str, cwd: Path) -> dict:
    """``overhead.<call>`` run with the Cambrian tree at ``code`` first on the path, in a
    process of its own; what it returned."""
    program = ("import json; from pathlib import Path; import overhead; "
               f"r = overhead.{call}; print('RESULT ' + json.dumps(r))")
    env = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{ROOT / 'benchmarks'}"}
    cwd.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", program], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the run with {code} failed:\n{done.stderr[-3000:]}")
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def commit_of(code: Path) -> str:
    return subprocess.run(["git", "-C", str(code), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "unknown"


def novelty_resume_runs(sizes: list[int], trees: list[tuple[str, Path]], cache: Path,
                        workdir: Path) -> None:
    builder = trees[0][1]
    for size in sizes:
        built = cache / f"novelty-{size}-{commit_of(builder)}"
        if not (built / "built.json").exists():
            shutil.rmtree(built, ignore_errors=True)
            made = in_process(builder, f"build_novelty_run({size}, Path({str(built)!r}))",
                              workdir / "build")
            (built / "built.json").write_text(json.dumps(made))
            note(f"run folder of {size:,} embedded programs built by {builder} in "
                 f"{made['prefill_s']:.0f} s")
        store_mb = sum(f.stat().st_size for f in (built / "run").glob("run.sqlite*")) / 2**20
        print(f"# {size:,} evaluated programs, each embedded (384-d): store {store_mb:,.0f} MB "
              f"({built}); copied for each tree", flush=True)
        for name, code in trees:
            copy = workdir / f"{name}{size}"
            shutil.copytree(built, copy)
            result = in_process(code, f"novelty_resume(Path({str(copy / 'run')!r}))", workdir)
            files_mb = sum(f.stat().st_size for f in (copy / "run").glob("novelty_index/*"))
            shutil.rmtree(copy, ignore_errors=True)
            note(f"{name} code ({code}, {commit_of(code)}), {size:,} programs done")
            labels = ["archive replayed, index rebuilt", "from the resume snapshot"]
            for label, s in zip(labels, result["sessions"]):
                print(f"  {name} {size:>9,}: resume ({label}) {s['resume_s']:6.2f} s wall, "
                      f"{s['resume_cpu_s']:6.2f} CPU-s = open {s['open_s']:.2f} s "
                      f"({s['open_cpu_s']:.2f}) + archive {s['archive_s']:.2f} s "
                      f"({s['archive_cpu_s']:.2f}) + novelty index {s['index_s']:.2f} s "
                      f"({s['index_cpu_s']:.2f} CPU-s; {s['index_rows']:,} rows, "
                      f"{s['index_from_files']:,} from its files); resident {s['resident_mb']:,.0f} "
                      f"MB after it; at the session's end snapshot written "
                      f"{s['snapshot_write_s']:.2f} s, index files {s['index_write_s']:.2f} s",
                      flush=True)
                print(f"  {name} {size:>9,}:   then {s['lookups']} near-copies looked up: "
                      f"{s['found']} found, {s['lookup_ms']:.2f} ms median "
                      f"({s['lookup_cpu_ms']:.2f} CPU-ms), {s['lookup_p90_ms']:.2f} ms 90th "
                      "percentile", flush=True)
            print(f"  {name} {size:>9,}: peak memory {result['peak_mb']:,.0f} MB; index files "
                  f"{files_mb / 2**20:,.0f} MB; the store's first open (a migration when the "
                  f"store is older) {result['first_open_s']:.2f} s", flush=True)


def current_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def memory() -> str:
    current = 0.0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return f"resident {current:,.0f} MB, peak {peak:,.0f} MB"


def note(what: str) -> None:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# {time.strftime('%H:%M:%S')} {what}; load: {load}; {memory()}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,10000,100000")
    parser.add_argument("--generations", type=int, default=30)
    parser.add_argument("--novelty-size", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-utilisation", action="store_true")
    parser.add_argument("--novelty-resume", action="store_true",
                        help="time a resume with novelty on instead (see the module's text)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="with --novelty-resume: a folder that keeps the built run folders")
    parser.add_argument("--old", type=Path, default=None,
                        help="an earlier Cambrian tree (git worktree add --detach DIR COMMIT): "
                             "its loop cost is measured too, before this checkout's, per size")
    args = parser.parse_args()
    note("start")
    if args.novelty_resume:
        trees = [("old", args.old.resolve())] if args.old is not None else []
        with tempfile.TemporaryDirectory() as tmp:
            cache = args.cache or Path(tmp) / "cache"
            novelty_resume_runs([int(x) for x in args.sizes.split(",")],
                                trees + [("new", ROOT)], cache, Path(tmp))
        note("done")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        costs, old_costs = [], []
        for size in args.sizes.split(","):
            if args.old is not None:
                old_costs.append(loop_cost_in(args.old.resolve(), int(size), args.generations,
                                              workdir / f"old{size}"))
                note(f"old code, archive {int(size):,} done")
            costs.append(loop_cost_in(ROOT, int(size), args.generations, workdir / f"new{size}"))
            note(f"archive {int(size):,} done")
        usage = [] if args.no_utilisation else [
            utilisation(0.20, 0.05, 20, workdir, "proposals slower than evaluations"),
            utilisation(0.02, 0.30, 20, workdir, "proposals faster than evaluations"),
        ]
        novelty = novelty_cost(args.novelty_size, workdir)
        note("novelty index done")
    if args.json:
        print(json.dumps({"loop_cost": costs, "old_loop_cost": old_costs, "utilisation": usage,
                          "novelty": novelty}, indent=2))
        return 0
    print(f"loop cost per generation (LLM and evaluation excluded), {args.generations} "
          "generations a session; each size in its own process")
    for index, c in enumerate(costs):
        if old_costs:
            print_loop_cost("old", old_costs[index])
        print_loop_cost("new" if old_costs else "", c)
    if usage:
        print("evaluation workers busy (2 slots): whole run / steady state")
    for u in usage:
        print(f"  {u['case']:<36} (LLM {u['llm_s']:.2f} s, eval {u['eval_s']:.2f} s): "
              f"{100 * u['worker_busy_share']:.0f}% / {100 * u['steady_busy_share']:.1f}% busy")
    print(f"novelty index, {novelty['embeddings']:,} embeddings (384-d) on one island")
    print(f"  nearest-neighbour lookup {novelty['lookup_ms']:.2f} ms median, "
          f"{novelty['lookup_p90_ms']:.2f} ms 90th percentile; near-copies found "
          f"{100 * novelty['recall']:.0f}%")
    print(f"  build {novelty['build_s']:.2f} s, restore from the store "
          f"{novelty['restore_s']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
