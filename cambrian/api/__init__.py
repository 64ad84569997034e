"""The Python API the CLI is a thin layer over: runs of a task folder (``runs.py``),
``run_evolution`` for code and a Python evaluator (``inline.py``) with OpenEvolve's one-call
helpers on top (``one_call.py``: ``evolve_function``, ``evolve_algorithm``, ``evolve_code``),
and the deterministic re-execution of a stored run (``replay.py``)."""

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
from cambrian.api.one_call import evolve_algorithm, evolve_code, evolve_function
from cambrian.api.replay import ReplayError, ReplayReport, replay
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

__all__ = ["BestProgram", "EvolutionResult", "NoCorrectProgram", "ReplayError", "ReplayReport",
           "RunExists", "best", "code_version", "default_run_dir", "discard_unstarted",
           "evolve", "evolve_algorithm", "evolve_code", "evolve_function", "history_rows", "init", "model_entry", "replay", "resolve_config", "resume",
           "run_blocking", "run_evolution", "run_evolution_async", "run_status", "start",
           "stream_evolution"]
