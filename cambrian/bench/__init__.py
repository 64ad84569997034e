"""Benchmarks: a grid of variants (search algorithms or named override sets) × tasks × seeds,
each an ordinary run with the same budget, aggregated into a table and a best-vs-evaluations plot.

    from cambrian.bench.runner import run_bench
    from cambrian.bench.spec import BenchSpec, algorithm_variants

    results = run_bench(BenchSpec(variants=tuple(algorithm_variants(["shinka", "hill-climb"])),
                                  task_dirs=(Path("examples/circle_packing"),), budget=20,
                                  seeds=3, out_dir=Path("runs/bench")))

Modules: ``spec`` (the grid), ``runs`` (one run: start, resume or skip), ``metrics`` (what a
store yields), ``aggregate`` (statistics over seeds), ``outputs`` (JSON, markdown, PNG),
``runner`` (the loop), ``display`` and ``cli`` (the terminal). Nothing is imported here, so that
registering the CLI command costs the main CLI nothing.
"""
