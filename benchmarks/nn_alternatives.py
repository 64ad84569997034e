"""Nearest-neighbour lookup for novelty rejection: the exact float32 scan Cambrian uses
(``search/novelty.py`` ``SimilarityIndex``) against the alternatives the speed issue named,
on the same 100,000 unit vectors (384-d, MiniLM's size) and the same near-copy queries:

  exact scans with smaller stored vectors (faiss's scalar quantizers, fp16 and 8-bit; usearch's
  exact search on f16 and i8), and an HNSW graph (usearch), with its build time and its recall
  of near-copies (a query made from a stored vector plus noise must find that vector).

    .venv/bin/python benchmarks/nn_alternatives.py [--count 100000] [--queries 200]

faiss-cpu and usearch are not dependencies of Cambrian: a library that is not installed is
skipped with a line saying so (``pip install faiss-cpu usearch`` to measure them).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
from cambrian.search.novelty import SimilarityIndex  # noqa: E402

Search = Callable[[np.ndarray], int]


def measure(name: str, search: Search, queries: np.ndarray, truth: np.ndarray,
            setup_s: float = 0.0) -> None:
    search(queries[0])  # warm
    times, found = [], 0
    for query, expected in zip(queries, truth, strict=True):
        began = time.perf_counter()
        found += search(query) == expected
        times.append(time.perf_counter() - began)
    setup = f", built in {setup_s:.1f} s" if setup_s else ""
    print(f"  {name:<34} {1000 * np.median(times):7.2f} ms median "
          f"{1000 * np.percentile(times, 90):7.2f} ms p90, near-copies found "
          f"{100 * found / len(queries):5.1f}%{setup}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.count, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    truth = rng.choice(args.count, args.queries, replace=False)
    queries = vectors[truth] + 0.01 * rng.standard_normal((args.queries, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    print(f"# load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.count:,} vectors, "
          f"{args.queries} near-copy queries, one thread")

    index = SimilarityIndex()
    for candidate_id, vector in enumerate(vectors):
        index.add(0, candidate_id, vector)
    measure("cambrian exact float32 (numpy)", lambda q: index.nearest(0, q)[1], queries, truth)

    try:
        import faiss
    except ImportError:
        print("  faiss: not installed, skipped")
    else:
        faiss.omp_set_num_threads(1)
        for name, kind in (("fp16", faiss.ScalarQuantizer.QT_fp16),
                           ("8-bit", faiss.ScalarQuantizer.QT_8bit)):
            began = time.perf_counter()
            quantized = faiss.IndexScalarQuantizer(384, kind, faiss.METRIC_INNER_PRODUCT)
            quantized.train(vectors)
            quantized.add(vectors)
            measure(f"faiss exact scan, {name} vectors",
                    lambda q, ix=quantized: int(ix.search(q[None], 1)[1][0, 0]), queries, truth,
                    time.perf_counter() - began)
    try:
        from usearch.index import Index, MetricKind, search
    except ImportError:
        print("  usearch: not installed, skipped")
    else:
        half = vectors.astype(np.float16)
        measure("usearch exact scan, f16 vectors",
                lambda q: int(search(half, q.astype(np.float16), 1, MetricKind.IP, exact=True,
                                     threads=1).keys[0]), queries, truth)
        began = time.perf_counter()
        graph = Index(ndim=384, metric="ip", dtype="i8")
        graph.add(np.arange(args.count), vectors, threads=1)
        measure("usearch HNSW graph, i8 vectors", lambda q: int(graph.search(q, 1).keys[0]),
                queries, truth, time.perf_counter() - began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
