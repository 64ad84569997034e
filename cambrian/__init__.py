"""Cambrian: evolve programs with LLMs; every run is a replayable trace.

The package root stays import-light (evaluation sandboxes import ``cambrian.evaluate`` modules);
the API is loaded on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
_API = ("evolve", "start", "resume", "run_status", "best", "init", "run_evolution",
        "run_evolution_async", "stream_evolution", "EvolutionResult", "replay", "evolve_function",
        "evolve_algorithm", "evolve_code")
__all__ = [*_API, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _API:
        from cambrian import api

        return getattr(api, name)
    raise AttributeError(f"module 'cambrian' has no attribute {name!r}")
