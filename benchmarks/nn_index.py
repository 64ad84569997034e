"""The novelty index's nearest-neighbour lookup: an earlier tree's ``SimilarityIndex`` and this
checkout's, on the same vectors and queries, timed in turn query by query (old, new, new,
old, ...), with the machine's load printed before and after.

    .venv/bin/python benchmarks/nn_index.py --old /tmp/old-tree [--sizes 100000,1000000]
                                            [--queries 200] [--threshold 0.95]

``--old`` is an earlier Cambrian tree (``git worktree add --detach /tmp/old-tree COMMIT``): its
``SimilarityIndex`` class is read from its ``cambrian/search/novelty.py`` (or
``similarity_index.py``) and run as it is. Vectors are random unit 384-d float32 (the bundled
MiniLM's size), all on one island (the worst case). Three kinds of query, 200 each:
near-copies (a stored vector plus noise, cosine about 0.98: the filter exists to catch them),
edge cases (cosine exactly ``threshold`` + 0.0001 to a stored vector) and unrelated vectors. A
near-copy or an edge case counts as found when the lookup names its source. The new index is
asked with ``at_least=threshold``, as the filter asks it. Also printed: the time to build each
index and the process's resident memory after each.

Both tables are held at once: a million vectors need about 3.2 GB for the two indexes and
1.5 GB for the source vectors.
"""

from __future__ import annotations

import argparse
import ast
import gc
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cambrian.search.similarity_index import SimilarityIndex  # noqa: E402


def old_index_class(tree: Path) -> type:
    """The ``SimilarityIndex`` class as the old tree defines it (its module's source, the class
    alone, executed with numpy: the old class needs nothing else)."""
    for name in ("cambrian/search/similarity_index.py", "cambrian/search/novelty.py"):
        path = tree / name
        if not path.exists():
            continue
        source = path.read_text()
        for node in ast.parse(source).body:
            if isinstance(node, ast.ClassDef) and node.name == "SimilarityIndex":
                namespace: dict = {"np": np, "__name__": "old_similarity_index"}
                exec("from __future__ import annotations\n"  # noqa: S102 - our own old code
                     + ast.get_source_segment(source, node), namespace)
                return namespace["SimilarityIndex"]
    raise SystemExit(f"no SimilarityIndex in {tree}")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def at_cosine(vector: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    noise = rng.standard_normal(vector.shape[0]).astype(np.float32)
    noise -= (noise @ vector) * vector
    noise /= np.linalg.norm(noise)
    return (cosine * vector + np.sqrt(1 - cosine**2) * noise).astype(np.float32)


def one_size(count: int, queries: int, threshold: float, old_class: type) -> None:
    rng = np.random.default_rng(count)
    vectors = rng.standard_normal((count, 384), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    base = rss_mb()
    began = time.perf_counter()
    old = old_class()
    for candidate_id, vector in enumerate(vectors):
        old.add(0, candidate_id, vector)
    old_build = time.perf_counter() - began
    old_mb = rss_mb() - base
    began = time.perf_counter()
    new = SimilarityIndex()
    new.add_many(0, list(range(count)), vectors)
    new_build = time.perf_counter() - began
    new_mb = rss_mb() - base - old_mb

    sources = rng.choice(count, queries, replace=False)
    kinds: dict[str, list[tuple[np.ndarray, int | None]]] = {
        "near-copies (cosine ~0.98)": [], f"at the threshold ({threshold} + 0.0001)": [],
        "unrelated": []}
    for source in sources:
        near = vectors[source] + 0.01 * rng.standard_normal(384).astype(np.float32)
        kinds["near-copies (cosine ~0.98)"].append((near / np.linalg.norm(near), int(source)))
        kinds[f"at the threshold ({threshold} + 0.0001)"].append(
            (at_cosine(vectors[source], threshold + 1e-4, rng), int(source)))
        stranger = rng.standard_normal(384).astype(np.float32)
        kinds["unrelated"].append((stranger / np.linalg.norm(stranger), None))
    del vectors  # the queries are made: the two indexes hold the rest
    gc.collect()
    print(f"{count:,} vectors (384-d) on one island; build: old {old_build:.1f} s (one by one), "
          f"new {new_build:.1f} s (at once, as a restore does); resident memory: old "
          f"{old_mb:,.0f} MB, new {new_mb:,.0f} MB")
    for kind, cases in kinds.items():
        times: dict[str, list[float]] = {"old": [], "new": []}
        found = {"old": 0, "new": 0}
        for number, (query, source) in enumerate(cases):
            order = ("old", "new") if number % 2 == 0 else ("new", "old")
            for name in order:
                began = time.perf_counter()
                answer = (old.nearest(0, query) if name == "old"
                          else new.nearest(0, query, at_least=threshold))
                times[name].append(time.perf_counter() - began)
                found[name] += source is not None and answer is not None and answer[1] == source
        old_ms, new_ms = (1000 * float(np.median(times[n])) for n in ("old", "new"))
        recall = ("" if cases[0][1] is None else
                  f"; found: old {100 * found['old'] / len(cases):.0f}%, "
                  f"new {100 * found['new'] / len(cases):.0f}%")
        print(f"  {kind:<34} median old {old_ms:7.2f} ms, new {new_ms:7.2f} ms (new/old "
              f"{new_ms / old_ms:.3f}); p90 old {1000 * np.percentile(times['old'], 90):.2f}, "
              f"new {1000 * np.percentile(times['new'], 90):.2f} ms{recall}", flush=True)
    del old, new
    gc.collect()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threshold", type=float, default=0.95)
    args = parser.parse_args()
    old_class = old_index_class(args.old)
    threads = {k: v for k, v in os.environ.items()
               if k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    print(f"# {time.strftime('%H:%M:%S')} load: {load()}; BLAS threads: {threads or 'default'}")
    for size in args.sizes.split(","):
        one_size(int(size), args.queries, args.threshold, old_class)
        print(f"# {time.strftime('%H:%M:%S')} load: {load()}; peak resident memory "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
