"""The Python API the CLI is a thin layer over: runs of a task folder (``runs.py``), and
``run_evolution`` for code and a Python evaluator (``inline.py``)."""

from __future__ import annotations

from cambrian.api.blocking import run_blocking
from cambrian.api.inline import (
    EvolutionResult,
    history_rows,
    model_entry,
    run_evolution,
    run_evolution_async,
    stream_evolution,
)
from cambrian.api.runs import (
    BestProgram,
    NoCorrectProgram,
    RunExists,
    best,
    code_version,
    default_run_dir,
    discard_unstarted,
    evolve,
    init,
    resolve_config,
    resume,
    run_status,
    start,
)

__all__ = ["BestProgram", "EvolutionResult", "NoCorrectProgram", "RunExists", "best",
           "code_version", "default_run_dir", "discard_unstarted", "evolve", "history_rows",
           "init", "model_entry", "resolve_config", "resume", "run_blocking", "run_evolution",
           "run_evolution_async", "run_status", "start", "stream_evolution"]
