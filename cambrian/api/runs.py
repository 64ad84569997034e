"""Runs of a task folder: create one (``start``, every check before its folder is made),
reopen one (``resume``), run one to its end (``evolve``), and read one (``run_status``,
``best``); ``init`` writes a task skeleton."""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import cambrian
from cambrian.api.blocking import run_blocking
from cambrian.api.config_layers import build_layers, config_layers, resume_layers
from cambrian.config import ConfigError, RunConfig, build_config, stored_form
from cambrian.core.bus import Subscriber
from cambrian.core.events import ConfigOverridden
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.child_env import register_secret_values
from cambrian.evaluate.factory import build_evaluator
from cambrian.llm.base import LLMProvider
from cambrian.llm.factory import build_providers, configured_secrets
from cambrian.search.build import build_evolution, check_names, check_task_settings
from cambrian.search.engine import Evolution, RunSummary
from cambrian.status import RunStatus
from cambrian.status import run_status as status_of_store
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.run_files import write_best, write_config, write_program_files
from cambrian.store.store import STORE_FILENAME, Store, StoreError
from cambrian.task.folder import Task, load_task, peer_config
from cambrian.task.peer_configs import PeerConfig
from cambrian.task.program_files import is_bundle


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
    """Defaults < the task's config.yaml < ``config`` < ``overrides``. A ``config`` file that
    is a peer's (OpenEvolve, ShinkaEvolve) is translated and replaces the folder's peer file."""
    return build_layers(config_layers(Path(task_dir), config), overrides)


def _with_peer_note(task: Task, peer: PeerConfig | None) -> Task:
    """The task, its notes naming the peer file given with ``-c`` instead of the folder's."""
    if peer is None:
        return task
    own = peer_config(task.root)
    notes = [note for note in task.notes if own is None or note != own.note]
    return replace(task, notes=(peer.note, *notes))


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
    ``subscribers`` receive every event the run records, once committed. Everything that can
    be checked is checked before the run folder is made: a failure leaves nothing behind."""
    layers = config_layers(Path(task_dir), config)
    resolved = build_layers(layers, overrides)
    task = _with_peer_note(load_task(Path(task_dir), resolved), layers.given_peer)
    check_names(resolved, new_run=True)
    check_task_settings(task, resolved)
    providers = providers if providers is not None else build_providers(resolved.llm)
    target = Path(run_dir) if run_dir is not None else default_run_dir(task)
    evolution, made = create_run(target, task, resolved, providers, subscribers)
    evolution.folder_before_run = (None if made is not None
                                   else frozenset(p.name for p in target.iterdir()
                                                  if p.name not in _RUN_FILES))
    evolution.folder_made = made
    return evolution


def create_run(target: Path, task: Task, config: RunConfig,
               providers: dict[str, LLMProvider], subscribers: list[Subscriber] | None,
               ) -> tuple[Evolution, Path | None]:
    """The run folder made (or claimed), its store, run row and config written, the loop
    built; and the outermost folder made (None: it existed). A failure removes what it made."""
    claim_folder(target)
    made = make_run_folder(target)
    store: Store | None = None
    try:
        store = Store.open(target, create=True, secrets=configured_secrets(config.llm))
        _create_run(store, task, config)
        write_config(target, config)
        return _build(target, task, config, store, providers, subscribers), made
    except BaseException:
        if store is not None:
            store.close()
        _remove_run_files(target, made)
        raise


def make_run_folder(target: Path) -> Path | None:
    """Make the run folder and its missing parents; the outermost folder made (``runs/`` for
    ``runs/task-time`` in a fresh folder), None when the run folder existed. A path under a
    file, or a folder that cannot be made, is one line."""
    missing = [folder for folder in (target, *target.parents)
               if not os.path.lexists(folder)]
    existing = target.parents[len(missing) - 1] if missing else target
    if existing.exists() and not existing.is_dir():
        raise ConfigError(f"the run folder {target} cannot be made: {existing} is a file, "
                          "not a folder; choose another --run-dir")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"the run folder {target} cannot be made: {exc.strerror} "
                          f"({exc.filename or target}); choose another --run-dir") from None
    return missing[-1] if missing else None


def claim_folder(target: Path) -> None:
    """Refuse a folder holding a run; clear a store left without a run (a start that failed
    before it could record one, with an older Cambrian)."""
    if not (target / STORE_FILENAME).exists():
        return
    try:
        store = Store.open(target)
    except StoreError:
        raise RunExists(f"{target} holds a run store this Cambrian cannot open; choose another "
                        "--run-dir") from None
    try:
        holds_run = store.runs.exists()
    finally:
        store.close()
    if holds_run:
        raise RunExists(f"{target} already holds a run; continue it with "
                        f"`cambrian resume {target}`")
    _remove_run_files(target, made=None)


_RUN_FILES = (STORE_FILENAME, f"{STORE_FILENAME}-wal", f"{STORE_FILENAME}-shm", "config.yaml")


def _remove_run_files(target: Path, made: Path | None) -> None:
    """Undo a start that failed: the run's files, and ``made`` (the outermost folder the start
    made) whole. Never raises: the start's own error is the one to report."""
    for name in _RUN_FILES:
        with contextlib.suppress(OSError):
            (target / name).unlink(missing_ok=True)
    if made is not None:
        shutil.rmtree(made, ignore_errors=True)


def discard_unstarted(evolution: Evolution) -> None:
    """Remove a new run that stopped before its first LLM call (its preflight failed): the
    whole folder when ``start`` made it, else only what the run wrote into the folder it was
    given (what was there before stays)."""
    evolution.store.close()
    target = evolution.run_dir
    before = evolution.folder_before_run
    if before is None:  # the start made the folder (and maybe parents such as runs/)
        shutil.rmtree(evolution.folder_made or target, ignore_errors=True)
        return
    for entry in target.iterdir():
        if entry.name in before:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _create_run(store: Store, task: Task, resolved: RunConfig) -> None:
    with store.transaction():
        store.runs.create(
            run_id=uuid.uuid4().hex, task_name=task.name, task_dir=str(task.root),
            direction=task.direction, language=task.language.name,
            config=stored_form(resolved), seed=resolved.evolution.seed,
            code_version=code_version(),
        )
        store.runs.add_environment(
            evaluator=str(task.evaluator_path.relative_to(task.root)), contract=task.contract,
            command=_evaluation_command(task),
            limits=stored_form(resolved)["evaluation"], toolchain=_toolchain(task),
            file_hashes=task.file_hashes(),
        )
        store.meta.set("program_filename", task.program_filename)
        if task.has_initial_program:  # else the LLM writes it when the run starts
            Recorder(store).add_candidate(NewCandidate(
                generation=0, island=0, parent_id=None, operator="init",
                status=CandidateStatus.PENDING, language=task.language.name,
                source=task.initial_source, description="initial program"))


def _build(run_dir: Path, task: Task, config: RunConfig, store: Store,
           providers: dict[str, LLMProvider], subscribers: list[Subscriber] | None) -> Evolution:
    register_secret_values(configured_secrets(config.llm))  # never in a candidate's environment
    return build_evolution(run_dir, task, config, store, providers,
                           build_evaluator(task, config, run_dir, store),
                           subscribers=subscribers or ())


def resume(
    run_dir: str | Path,
    *,
    overrides: list[str] | None = None,
    config: str | Path | None = None,
    providers: dict[str, LLMProvider] | None = None,
    subscribers: list[Subscriber] | None = None,
) -> Evolution:
    """Reopen a run; ``overrides`` may change e.g. the budget (``evolution.generations=50``);
    ``config``, a file whose settings go over the stored ones (an OpenEvolve or ShinkaEvolve
    file translated, its iterations counted on from the children evaluated so far: OpenEvolve's
    second phase continuing the first one's run)."""
    target = Path(run_dir)
    with Store.open(target) as peek:  # the configuration (and a migration), before the secrets
        info = peek.runs.info()
        evaluated = status_of_store(peek).generations if config is not None else 0
    if not info.task_dir:
        raise ConfigError(
            f"{target} was imported from {info.framework} without its task folder; import it "
            "again with `cambrian trace import SRC RUN --task TASK_DIR` (the folder holding "
            "the evaluator and the initial program)")
    if config is not None:
        layers = resume_layers(info.config, config, Path(info.task_dir), evaluated)
        resolved = build_layers(layers, overrides)
    else:
        layers, resolved = None, build_config([info.config], overrides)
    task = load_task(Path(info.task_dir), resolved)
    if layers is not None:
        task = _with_peer_note(task, layers.given_peer)
    check_names(resolved)
    check_task_settings(task, resolved)
    providers = providers if providers is not None else build_providers(resolved.llm)
    store = Store.open(target, secrets=configured_secrets(resolved.llm))
    changes = ([f"config {config}"] if config is not None else []) + list(overrides or [])
    try:
        if changes:
            write_config(target, resolved)
            recorder = Recorder(store)
            with recorder.transaction():
                recorder.emit(ConfigOverridden(overrides=changes))
                store.runs.update_config(stored_form(resolved))
        return _build(target, task, resolved, store, providers, subscribers)
    except BaseException:
        store.close()
        raise


def evolve(
    task_dir: str | Path,
    *,
    config: RunConfig | dict[str, Any] | str | Path | None = None,
    overrides: list[str] | None = None,
    run_dir: str | Path | None = None,
    providers: dict[str, LLMProvider] | None = None,
    subscribers: list[Subscriber] | None = None,
) -> RunSummary:
    """Run a whole evolution of a task folder and return its summary (blocking; inside a
    running event loop, e.g. a notebook, the run gets a loop of its own in a worker thread).
    :func:`run_evolution` takes code and a Python evaluator and returns the best code."""

    async def whole_run() -> RunSummary:
        evolution = start(task_dir, config=config, overrides=overrides, run_dir=run_dir,
                          providers=providers, subscribers=subscribers)
        try:
            return await evolution.run()
        finally:
            evolution.store.close()

    return run_blocking(whole_run)


def run_status(run_dir: str | Path) -> RunStatus:
    """What ``cambrian status`` shows: progress, scores, success rates, per-model figures.
    (Named ``run_status``, not ``status``: ``cambrian.status`` is the module computing it.)"""
    store = Store.open(Path(run_dir))
    try:
        return status_of_store(store)
    finally:
        store.close()


def best(run_dir: str | Path, out: str | Path | None = None) -> BestProgram:
    """Write the best program of a run to ``out`` (default: ``run_dir/best/``, with its scores);
    a program of several files is written as a tree, ``out`` being its folder (the path
    returned is its entry file's)."""
    store = Store.open(Path(run_dir))
    try:
        summary = status_of_store(store)
        if summary.best_id is None:
            raise NoCorrectProgram("no correct program in this run yet")
        filename = store.meta.get("program_filename") or "program.txt"
        source = store.candidates.get(summary.best_id).source or ""
        if out is not None and is_bundle(source):
            target = write_program_files(Path(out), source, filename)
        elif out is not None:
            target = Path(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source)
        else:
            target = write_best(Path(run_dir), store, summary.best_id, filename)
    finally:
        store.close()
    return BestProgram(summary.best_id, summary.best_score, target)


def init(task_dir: str | Path, *, force: bool = False) -> list[Path]:
    """Create a working task skeleton; return the files written."""
    from cambrian.task.skeleton import write_skeleton

    return write_skeleton(Path(task_dir), force=force)
