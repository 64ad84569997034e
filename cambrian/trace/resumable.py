"""An imported peer run (ShinkaEvolve's ``programs.sqlite``, an OpenEvolve checkpoint) made
into a Cambrian run that ``cambrian resume`` continues.

A trace read from a peer knows the programs, their scores and the LLM calls, but not the task
folder they were evaluated in, and its configuration is the peer's. To continue it, the run
record gets the task folder (given, or found beside the peer's results: the folder holding an
evaluator, at most three folders above the results or checkpoint), the Cambrian configuration
that folder gives (the peer's own config translated, ``peer_configs.py``), the program's file
name and an
evaluation environment, so a resumed run evaluates children exactly as a run started on that
folder would. Its budget (``evolution.generations``) is the number of children imported, or the
folder's planned number when that is larger: ``cambrian resume RUN --generations N`` goes on to
N children. Where the run came from is kept beside it, never in the configuration.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from cambrian.config import ConfigError, build_config, stored_form
from cambrian.config.extras import fit_defaults_to_installed
from cambrian.task.folder import EVALUATOR_NAMES, TaskError, load_task, task_config_layer
from cambrian.trace.model import EnvironmentRecord, Trace

# Keys the peer importers put in a trace's configuration to say where it came from.
PROVENANCE_KEYS = ("imported_from", "checkpoint", "best_program_id", "last_iteration")
SEARCH_DEPTH = 4  # results or checkpoint_N, then up to checkpoints/, the output, the task


class NotResumable(ValueError):
    """The imported run has no task folder a resumed run could evaluate in."""


def find_task_folder(origin: Path | None) -> Path | None:
    """The nearest folder at or above ``origin`` that holds an evaluator."""
    if origin is None:
        return None
    folder = Path(origin).resolve()
    if folder.is_file():
        folder = folder.parent
    for candidate in [folder, *folder.parents][:SEARCH_DEPTH]:
        if any((candidate / name).is_file() for name in EVALUATOR_NAMES):
            return candidate
    return None


def provenance(trace: Trace) -> dict[str, str]:
    """Where a peer's trace came from (its framework, checkpoint, best program id)."""
    return {key: str(trace.run.config[key]) for key in PROVENANCE_KEYS
            if trace.run.config.get(key) is not None}


def make_resumable(trace: Trace, task_dir: Path | None) -> Trace:
    """``trace`` with a run record and an environment a resumed Cambrian run can use.

    ``task_dir`` None: the folder is looked for beside the trace's origin; a trace without
    one is returned with a valid configuration but no task folder (resuming it then says how
    to give one)."""
    folder = Path(task_dir).resolve() if task_dir is not None else find_task_folder(trace.origin)
    # Every program but the initial one (a checkpoint may have dropped a child's parent).
    children = sum(1 for c in trace.candidates if c.parent_id is not None or c.iteration > 0)
    if folder is None:
        config = {"evolution": {"generations": children}}
        return replace(trace, run=replace(trace.run, config=config))
    try:
        resolved = fit_defaults_to_installed(build_config([task_config_layer(folder)]))
        task = load_task(folder, resolved)
    except (ConfigError, TaskError) as exc:
        raise NotResumable(f"the task folder {folder} cannot be used: {exc}") from None
    config = stored_form(resolved)
    config["evolution"]["generations"] = max(children, resolved.evolution.generations)
    environment = EnvironmentRecord(
        id="1", evaluator=str(task.evaluator_path.relative_to(task.root)),
        contract=task.contract, command=f"imported from {trace.run.framework}",
        limits=config["evaluation"], file_hashes=task.file_hashes(), created_at=time.time())
    run = replace(trace.run, config=config, task_dir=str(task.root), task=task.name,
                  program_filename=task.program_filename, direction=task.direction,
                  language=task.language.name, seed=resolved.evolution.seed)
    return replace(trace, run=run, environments=[environment])


__all__ = ["NotResumable", "find_task_folder", "make_resumable", "provenance"]
