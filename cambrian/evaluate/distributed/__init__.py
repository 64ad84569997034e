"""Evaluations on a Ray cluster (``execution.backend: ray``): the executor (``executor.py``), what
a worker builds and runs (``plans.py``, ``worker.py``), the task files it gets (``bundle.py``),
the connection and its retries (``cluster.py``) and a judge that fans cases out (``judge.py``);
and a local model served by replicas on the workers (``llm_replicas.py``, for
``llm.models[].replicas`` > 1).

Nothing here imports ``ray`` at module level except ``cluster.py``, ``executor.py`` and
``llm_replicas.py``: only ``cambrian.evaluate.executors.build_executor`` imports the first two,
and only for the Ray backend; only the composition root imports the last, and only for a model
with replicas.
"""
