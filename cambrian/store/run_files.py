"""Files a run keeps beside its store: the resolved config and a copy of the best program."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import yaml

from cambrian.config import RunConfig, stored_form
from cambrian.store.store import Store
from cambrian.task.program_files import check_relative, split_files


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def write_config(run_dir: Path, config: RunConfig) -> None:
    _atomic_write(run_dir / "config.yaml", yaml.safe_dump(stored_form(config), sort_keys=False))


def write_program_files(folder: Path, source: str, entry: str) -> Path:
    """Every file of a program under ``folder`` at its path (a one-file program at ``entry``),
    each written atomically; returns the entry's path."""
    for file in split_files(source, entry):
        _atomic_write(folder / check_relative(file.path), file.text)
    return folder / entry


def write_best(run_dir: Path, store: Store, candidate_id: int, filename: str) -> Path:
    """Copy the candidate's program (every file of it) to ``run_dir/best/`` with its scores
    (public ones only); returns the path of its entry file."""
    row = store.candidates.get(candidate_id)
    result = store.evaluations.latest(candidate_id)
    best_dir = run_dir / "best"
    program = write_program_files(best_dir, row.source or "", filename)
    info = {
        "candidate_id": row.id,
        "generation": row.generation,
        "score": row.score,
        "public": result.public if result else {},
        "model": row.model,
        "operator": row.operator,
    }
    _atomic_write(best_dir / "info.json", json.dumps(info, indent=2, default=str))
    return program
