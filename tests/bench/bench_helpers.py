"""Shared pieces of the benchmark tests: a counter task and the overrides that point every run at
a scripted LLM server."""

from __future__ import annotations

import json
from pathlib import Path

from support.scripted_llm import ScriptedLLM

from cambrian.bench.spec import BenchSpec, algorithm_variants

ALGORITHMS = ["shinka", "hill-climb"]


def scripted_sets(llm: ScriptedLLM, *labels: str) -> tuple[str, ...]:
    """Overrides using the scripted server as the only model (or as one model per label)."""
    models = [llm.model_config(name=label) for label in labels] or [llm.model_config()]
    return ("llm.models=" + json.dumps(models), "novelty.enabled=false")


def grid(llm: ScriptedLLM, task: Path, out: Path, *, budget: int = 4, seeds: int = 2,
         algorithms: list[str] | None = None, extra: tuple[str, ...] = ()) -> BenchSpec:
    return BenchSpec(variants=tuple(algorithm_variants(algorithms or ALGORITHMS)),
                     task_dirs=(task,), budget=budget, seeds=seeds, out_dir=out,
                     overrides=scripted_sets(llm) + extra)
