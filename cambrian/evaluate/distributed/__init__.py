"""Evaluations on a Ray cluster (``execution.backend: ray``): the executor (``executor.py``), what
a worker builds and runs (``plans.py``, ``worker.py``), the task files it gets (``bundle.py``),
the connection and its retries (``cluster.py``) and a judge that fans cases out (``judge.py``).

Nothing here imports ``ray`` at module level except ``cluster.py`` and ``executor.py``, which
only ``cambrian.evaluate.executors.build_executor`` imports, and only for the Ray backend.
"""
