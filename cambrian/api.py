"""The Python API: start, resume and run evolutions. The CLI is a thin layer over these."""

from __future__ import annotations

import asyncio
import platform
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cambrian
from cambrian.config import RunConfig, build_config, read_config_file
from cambrian.core.bus import Subscriber
from cambrian.core.events import ConfigOverridden
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.factory import build_evaluator
from cambrian.llm.base import LLMProvider
from cambrian.llm.factory import build_providers
from cambrian.search.build import build_evolution
from cambrian.search.engine import Evolution, RunSummary
from cambrian.status import RunStatus
from cambrian.status import run_status as status_of_store
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.run_files import write_best, write_config
from cambrian.store.store import STORE_FILENAME, Store
from cambrian.task.folder import Task, load_task, task_config_layer


class RunExists(FileExistsError):
    pass


class NoCorrectProgram(LookupError):
    """The run has no correct program yet, so there is no best one."""


@dataclass(frozen=True)
class BestProgram:
    candidate_id: int
    score: float | None
    path: Path


def code_version() -> str:
    root = Path(cambrian.__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{cambrian.__version__}+{commit}" if commit else cambrian.__version__


def _toolchain(task: Task) -> dict[str, str]:
    info = {"python": sys.version.split()[0], "platform": platform.platform()}
    compilers = {"cpp": ["g++", "--version"], "c": ["gcc", "--version"], "rust": ["rustc", "--version"]}
    command = compilers.get(task.language.name)
    if command:
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=10).stdout
            info[command[0]] = out.splitlines()[0] if out else "unknown"
        except OSError:
            info[command[0]] = "not found"
    return info


def resolve_config(
    task_dir: Path,
    config: RunConfig | dict[str, Any] | str | Path | None = None,
    overrides: list[str] | None = None,
) -> RunConfig:
    """Defaults < the task's config.yaml < ``config`` < ``overrides``."""
    layers = [task_config_layer(Path(task_dir))]
    if isinstance(config, RunConfig):
        layers.append(config.model_dump(exclude_unset=True))
    elif isinstance(config, dict):
        layers.append(config)
    elif config is not None:
        layers.append(read_config_file(Path(config)))
    return build_config(layers, overrides)


def _evaluation_command(task: Task) -> str:
    if task.contract == "judge":
        return f"compile, run on generated cases, score with {task.evaluator_path.name}"
    if task.contract == "command":
        return f"python {task.evaluator_path.name} --program_path P --results_dir D"
    return f"evaluate(P) from {task.evaluator_path.name}"


def default_run_dir(task: Task) -> Path:
    return Path("runs") / f"{task.name}-{time.strftime('%Y%m%d-%H%M%S')}"


def start(
    task_dir: str | Path,
    *,
    config: RunConfig | dict[str, Any] | str | Path | None = None,
    overrides: list[str] | None = None,
    run_dir: str | Path | None = None,
    providers: dict[str, LLMProvider] | None = None,
    subscribers: list[Subscriber] | None = None,
) -> Evolution:
    """Create a new run for the task folder (nothing is evaluated until ``run()``);
    ``subscribers`` receive every event the run records, once committed."""
    resolved = resolve_config(Path(task_dir), config, overrides)
    task = load_task(Path(task_dir), resolved)
    target = Path(run_dir) if run_dir is not None else default_run_dir(task)
    if (target / STORE_FILENAME).exists():
        raise RunExists(f"{target} already holds a run; continue it with `cambrian resume {target}`")
    store = Store.open(target, create=True)
    with store.transaction():
        store.runs.create(
            run_id=uuid.uuid4().hex, task_name=task.name, task_dir=str(task.root),
            direction=task.direction, language=task.language.name,
            config=resolved.model_dump(mode="json"), seed=resolved.evolution.seed,
            code_version=code_version(),
        )
        store.runs.add_environment(
            evaluator=str(task.evaluator_path.relative_to(task.root)), contract=task.contract,
            command=_evaluation_command(task),
            limits=resolved.evaluation.model_dump(mode="json"), toolchain=_toolchain(task),
            file_hashes=task.file_hashes(),
        )
        store.meta.set("program_filename", task.program_filename)
        if task.has_initial_program:  # else the LLM writes it when the run starts
            store.candidates.add(NewCandidate(
                generation=0, island=0, parent_id=None, operator="init",
                status=CandidateStatus.PENDING, language=task.language.name,
                source=task.initial_source, description="initial program"))
    write_config(target, resolved)
    return _build(target, task, resolved, store, providers, subscribers)


def _build(run_dir: Path, task: Task, config: RunConfig, store: Store,
           providers: dict[str, LLMProvider] | None,
           subscribers: list[Subscriber] | None) -> Evolution:
    return build_evolution(
        run_dir, task, config, store,
        providers if providers is not None else build_providers(config.llm),
        build_evaluator(task, config, run_dir, store), subscribers=subscribers or ())


def resume(
    run_dir: str | Path,
    *,
    overrides: list[str] | None = None,
    providers: dict[str, LLMProvider] | None = None,
    subscribers: list[Subscriber] | None = None,
) -> Evolution:
    """Reopen a run; ``overrides`` may change e.g. the budget (``evolution.generations=50``)."""
    target = Path(run_dir)
    store = Store.open(target)
    info = store.runs.info()
    resolved = build_config([info.config], overrides)
    task = load_task(Path(info.task_dir), resolved)
    if overrides:
        write_config(target, resolved)
        recorder = Recorder(store)
        with recorder.transaction():
            recorder.emit(ConfigOverridden(overrides=list(overrides)))
            store.runs.update_config(resolved.model_dump(mode="json"))
    return _build(target, task, resolved, store, providers, subscribers)


def evolve(
    task_dir: str | Path,
    *,
    config: RunConfig | dict[str, Any] | str | Path | None = None,
    overrides: list[str] | None = None,
    run_dir: str | Path | None = None,
    providers: dict[str, LLMProvider] | None = None,
    subscribers: list[Subscriber] | None = None,
) -> RunSummary:
    """Run a whole evolution and return its summary (blocking)."""
    evolution = start(task_dir, config=config, overrides=overrides, run_dir=run_dir,
                      providers=providers, subscribers=subscribers)
    try:
        return asyncio.run(evolution.run())
    finally:
        evolution.store.close()


def run_status(run_dir: str | Path) -> RunStatus:
    """What ``cambrian status`` shows: progress, scores, success rates, per-model figures.
    (Named ``run_status``, not ``status``: ``cambrian.status`` is the module computing it.)"""
    store = Store.open(Path(run_dir))
    try:
        return status_of_store(store)
    finally:
        store.close()


def best(run_dir: str | Path, out: str | Path | None = None) -> BestProgram:
    """Write the best program of a run to ``out`` (default: ``run_dir/best/``, with its scores)."""
    store = Store.open(Path(run_dir))
    try:
        summary = status_of_store(store)
        if summary.best_id is None:
            raise NoCorrectProgram("no correct program in this run yet")
        if out is not None:
            target = Path(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(store.candidates.get(summary.best_id).source or "")
        else:
            filename = store.meta.get("program_filename") or "program.txt"
            target = write_best(Path(run_dir), store, summary.best_id, filename)
    finally:
        store.close()
    return BestProgram(summary.best_id, summary.best_score, target)


def init(task_dir: str | Path, *, force: bool = False) -> list[Path]:
    """Create a working task skeleton; return the files written."""
    from cambrian.task.skeleton import write_skeleton

    return write_skeleton(Path(task_dir), force=force)
