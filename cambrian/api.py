"""The Python API: start, resume and run evolutions. The CLI is a thin layer over these."""

from __future__ import annotations

import asyncio
import platform
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import cambrian
from cambrian.config import ConfigError, RunConfig, build_config, read_config_file
from cambrian.config.extras import fit_defaults_to_installed
from cambrian.config.loading import deep_merge
from cambrian.core.bus import Subscriber
from cambrian.core.events import ConfigOverridden, Event
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.child_env import register_secret_values
from cambrian.evaluate.factory import build_evaluator
from cambrian.llm.base import LLMProvider
from cambrian.llm.factory import build_providers, configured_secrets
from cambrian.llm.model_files import ALIASES, LOCAL_MODELS
from cambrian.search.build import build_evolution, check_names
from cambrian.search.engine import Evolution, RunSummary
from cambrian.status import RunStatus
from cambrian.status import run_status as status_of_store
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.run_files import write_best, write_config
from cambrian.store.store import STORE_FILENAME, Store, StoreError
from cambrian.task.folder import Task, load_task, task_config_layer
from cambrian.task.inline import write_inline_task

T = TypeVar("T")


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
    return fit_defaults_to_installed(build_config(layers, overrides))


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
    resolved = resolve_config(Path(task_dir), config, overrides)
    task = load_task(Path(task_dir), resolved)
    check_names(resolved, new_run=True)
    providers = providers if providers is not None else build_providers(resolved.llm)
    target = Path(run_dir) if run_dir is not None else default_run_dir(task)
    _claim(target)
    made_folder = not target.exists()
    store: Store | None = None
    try:
        store = Store.open(target, create=True, secrets=configured_secrets(resolved.llm))
        _create_run(store, task, resolved)
        write_config(target, resolved)
        evolution = _build(target, task, resolved, store, providers, subscribers)
        evolution.folder_before_run = (None if made_folder
                                       else frozenset(p.name for p in target.iterdir()
                                                      if p.name not in _RUN_FILES))
        return evolution
    except BaseException:
        if store is not None:
            store.close()
        _remove_run_files(target, made_folder)
        raise


def _claim(target: Path) -> None:
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
    _remove_run_files(target, made_folder=False)


_RUN_FILES = (STORE_FILENAME, f"{STORE_FILENAME}-wal", f"{STORE_FILENAME}-shm", "config.yaml")


def _remove_run_files(target: Path, made_folder: bool) -> None:
    for name in _RUN_FILES:
        (target / name).unlink(missing_ok=True)
    if made_folder:
        shutil.rmtree(target, ignore_errors=True)


def discard_unstarted(evolution: Evolution) -> None:
    """Remove a new run that stopped before its first LLM call (its preflight failed): the
    whole folder when ``start`` made it, else only what the run wrote into the folder it was
    given (what was there before stays)."""
    evolution.store.close()
    target = evolution.run_dir
    before = evolution.folder_before_run
    if before is None:
        shutil.rmtree(target, ignore_errors=True)
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
    providers: dict[str, LLMProvider] | None = None,
    subscribers: list[Subscriber] | None = None,
) -> Evolution:
    """Reopen a run; ``overrides`` may change e.g. the budget (``evolution.generations=50``)."""
    target = Path(run_dir)
    with Store.open(target) as peek:  # the configuration (and a migration), before the secrets
        info = peek.runs.info()
    resolved = build_config([info.config], overrides)
    task = load_task(Path(info.task_dir), resolved)
    check_names(resolved)
    providers = providers if providers is not None else build_providers(resolved.llm)
    store = Store.open(target, secrets=configured_secrets(resolved.llm))
    try:
        if overrides:
            write_config(target, resolved)
            recorder = Recorder(store)
            with recorder.transaction():
                recorder.emit(ConfigOverridden(overrides=list(overrides)))
                store.runs.update_config(resolved.model_dump(mode="json"))
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


def run_blocking(make: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine ``make()`` to its end and return its result. Without a running event
    loop this is ``asyncio.run``; inside one (Jupyter, an async application) the coroutine runs
    on a loop of its own in a worker thread while this thread waits, and an interrupt (Ctrl-C,
    the notebook's stop button) cancels it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(make))
    running: dict[str, Any] = {}
    ready = threading.Event()

    async def main() -> T:
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        ready.set()
        return await make()

    def work() -> None:
        try:
            running["value"] = asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            running["error"] = exc
        finally:
            ready.set()

    worker = threading.Thread(target=work, name="cambrian-run", daemon=True)
    worker.start()
    try:
        worker.join()
    except KeyboardInterrupt:
        ready.wait()
        if "loop" in running:
            try:
                running["loop"].call_soon_threadsafe(running["task"].cancel)
            except RuntimeError:  # the run ended meanwhile: its loop is closed
                pass
        worker.join()
        raise
    if "error" in running:
        raise running["error"]
    return running["value"]


async def _awaited(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


# --------------------------------------------------------------------------- run_evolution


def model_entry(model: str | None, api_base: str | None = None,
                api_key_env: str | None = None) -> dict[str, Any] | None:
    """The one ``llm.models`` entry that ``--model`` / ``--api-base`` / ``--api-key-env`` (or
    ``run_evolution(model=..., api_base=..., api_key_env=...)``) stand for; None when none is
    given. With an API base the provider is ``openai`` (any OpenAI-compatible server); without
    one it follows the name: a bundled local model (or a ``.gguf`` file) runs locally,
    ``claude-*`` is Anthropic, ``gemini-*`` is Gemini, and any other name is OpenAI's API. The
    key is read from ``api_key_env`` (default: the provider's usual variable). Anything else
    (several models, prices, temperatures) is ``llm.models`` in YAML."""
    if model is None:
        given = [flag for flag, value in (("--api-base", api_base), ("--api-key-env", api_key_env))
                 if value is not None]
        if given:
            raise ConfigError(f"{' and '.join(given)} need --model (the model's name)")
        return None
    if api_base is not None:
        entry: dict[str, Any] = {"provider": "openai", "model": model, "base_url": api_base}
    elif model.lower() in LOCAL_MODELS or model.lower() in ALIASES or model.endswith(".gguf"):
        if api_key_env is not None:
            raise ConfigError(f"{model} is a local model: it takes no --api-key-env (for a "
                              "server, give its address with --api-base)")
        entry = {"provider": "local", "model": ALIASES.get(model.lower(), model)}
    elif model.lower().startswith("claude"):
        entry = {"provider": "anthropic", "model": model}
    elif model.lower().startswith("gemini"):
        entry = {"provider": "gemini", "model": model}
    else:
        entry = {"provider": "openai", "model": model}
    if api_key_env is not None:
        entry["api_key_env"] = api_key_env
    return entry


HISTORY_COLUMNS = ("id", "parent_id", "generation", "island", "operator", "status", "score",
                   "model", "description", "error", "metrics", "evaluation", "created_at")


@dataclass(frozen=True)
class EvolutionResult:
    """What :func:`run_evolution` returns: the best program (its code, score and public
    metrics), how the run ended, and its history."""

    best_code: str | None  # None when no program was correct
    best_score: float | None
    best_metrics: dict[str, Any]  # the best program's public metrics
    best_id: int | None  # its candidate id (``cambrian show RUN_DIR ID``)
    initial_score: float | None
    run_dir: Path  # the run: `cambrian status|report|resume RUN_DIR` work on it
    stop_reason: str
    outcome: str  # completed, target_reached, no_improvement, budget_reached, stopped...
    evaluations: int
    llm_calls: int

    def history(self) -> list[dict[str, Any]]:
        """One row per candidate, in id order: ``id, parent_id, generation, island, operator,
        status, score, model, description, error, metrics`` (public), ``evaluation`` (the
        order its result was committed in; None when never evaluated) and ``created_at``."""
        return history_rows(self.run_dir)

    def to_dataframe(self) -> Any:
        """:meth:`history` as a pandas DataFrame (needs pandas)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("EvolutionResult.to_dataframe() needs pandas (pip install pandas); "
                              "history() gives the same rows as a list of dicts") from None
        return pandas.DataFrame(self.history(), columns=list(HISTORY_COLUMNS))


def history_rows(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every candidate of a run as a row (see :meth:`EvolutionResult.history`)."""
    with Store.open(Path(run_dir), read_only=True) as store:
        rows = store.candidates.list()
        order = {cid: index for index, cid in enumerate(store.evaluations.committed_order())}
        results = store.evaluations.latest_of({row.id for row in rows})
    return [{
        "id": row.id, "parent_id": row.parent_id, "generation": row.generation,
        "island": row.island, "operator": row.operator, "status": str(row.status),
        "score": row.score, "model": row.model, "description": row.description,
        "error": row.error,
        "metrics": dict(results[row.id].public) if row.id in results else {},
        "evaluation": order.get(row.id), "created_at": row.created_at,
    } for row in rows]


def _result(evolution: Evolution, summary: RunSummary) -> EvolutionResult:
    store = evolution.store
    code, metrics = None, {}
    if summary.best_id is not None:
        code = store.candidates.get(summary.best_id).source
        evaluation = store.evaluations.latest(summary.best_id)
        metrics = dict(evaluation.public) if evaluation is not None else {}
    return EvolutionResult(
        best_code=code, best_score=summary.best_score, best_metrics=metrics,
        best_id=summary.best_id, initial_score=summary.initial_score, run_dir=summary.run_dir,
        stop_reason=summary.stop_reason, outcome=summary.outcome.word,
        evaluations=summary.evaluations, llm_calls=summary.llm_calls)


async def run_evolution_async(
    initial_code: str | Path | None = None,
    evaluator: Callable[[str], Any] | str | Path | None = None,
    *,
    generations: int | None = None,
    model: str | None = None,
    api_base: str | None = None,
    api_key_env: str | None = None,
    target_score: float | None = None,
    patience: int | None = None,
    search: str | None = None,
    direction: str | None = None,
    language: str | None = None,
    problem: str | None = None,
    name: str | None = None,
    config: RunConfig | dict[str, Any] | str | Path | None = None,
    overrides: list[str] | None = None,
    run_dir: str | Path | None = None,
    on_event: Callable[[Event], None] | None = None,
    providers: dict[str, LLMProvider] | None = None,
) -> EvolutionResult:
    """:func:`run_evolution` for a running event loop: ``await run_evolution_async(...)``."""
    evolution = _start_inline(
        initial_code, evaluator, generations=generations, model=model, api_base=api_base,
        api_key_env=api_key_env, target_score=target_score, patience=patience, search=search,
        direction=direction, language=language, problem=problem, name=name, config=config,
        overrides=overrides, run_dir=run_dir, on_event=on_event, providers=providers)
    try:
        return _result(evolution, await evolution.run())
    finally:
        evolution.store.close()


def run_evolution(
    initial_code: str | Path | None = None,
    evaluator: Callable[[str], Any] | str | Path | None = None,
    **options: Any,
) -> EvolutionResult:
    """Evolve ``initial_code`` (the program's text, or a ``Path`` to its file) under
    ``evaluator`` and return the best program's code, score and metrics
    (:class:`EvolutionResult`, with the run's history).

    ``evaluator`` is a Python callable ``f(program_path) -> dict`` (OpenEvolve's shape: a dict of
    metrics, ``combined_score`` or else the mean of the numeric ones), an evaluator file, or a
    task folder (``initial_code`` then replaces its initial program, or may be left out). A
    callable runs contained like any evaluator, in a separate sandboxed process: it is sent
    there with cloudpickle and sees only what was pickled with it (``cambrian/task/inline.py``).
    The task folder is written into the run folder (``RUN_DIR/task``), so ``cambrian resume``,
    ``status``, ``report`` and ``ui`` work on the run as on any other. A program without
    EVOLVE-BLOCK markers gets them around all of it, with a warning.

    Options: ``generations`` (children to evaluate), ``model``/``api_base``/``api_key_env``
    (one model, as the CLI flags: :func:`model_entry`), ``target_score`` and ``patience``
    (early stops), ``search`` (algorithm), ``direction`` (``maximize``/``minimize``),
    ``language`` (default: python, or from the file's extension), ``problem`` (a statement for
    the prompts), ``name``, ``config`` (a dict, RunConfig or YAML file), ``overrides``
    (``section.key=value`` strings), ``run_dir``, ``on_event`` (called with every committed
    event, e.g. ``CandidateEvaluated``), ``providers``.

    Works inside a running event loop (Jupyter) too: the run then gets a loop of its own in a
    worker thread (``on_event`` is called there); ``await run_evolution_async(...)`` runs it on
    the notebook's loop instead, and :func:`stream_evolution` yields its events."""
    return run_blocking(lambda: run_evolution_async(initial_code, evaluator, **options))


async def stream_evolution(
    initial_code: str | Path | None = None,
    evaluator: Callable[[str], Any] | str | Path | None = None,
    **options: Any,
) -> AsyncIterator[Event | EvolutionResult]:
    """Run :func:`run_evolution_async` and yield its events as they are committed, then, last,
    its :class:`EvolutionResult`. Leaving the loop early stops the run (resumable)."""
    events: asyncio.Queue[Event] = asyncio.Queue()
    also = options.pop("on_event", None)

    def forward(event: Event) -> None:
        events.put_nowait(event)
        if also is not None:
            also(event)

    run = asyncio.ensure_future(
        run_evolution_async(initial_code, evaluator, on_event=forward, **options))
    try:
        while not run.done():
            next_event = asyncio.ensure_future(events.get())
            await asyncio.wait({next_event, run}, return_when=asyncio.FIRST_COMPLETED)
            if next_event.done():
                yield next_event.result()
            else:
                next_event.cancel()
        while not events.empty():
            yield events.get_nowait()
        yield run.result()
    finally:
        if not run.done():
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)


def _start_inline(
    initial_code: str | Path | None,
    evaluator: Callable[[str], Any] | str | Path | None,
    *,
    generations: int | None, model: str | None, api_base: str | None,
    api_key_env: str | None, target_score: float | None, patience: int | None,
    search: str | None, direction: str | None, language: str | None, problem: str | None,
    name: str | None, config: RunConfig | dict[str, Any] | str | Path | None,
    overrides: list[str] | None, run_dir: str | Path | None,
    on_event: Callable[[Event], None] | None, providers: dict[str, LLMProvider] | None,
) -> Evolution:
    """Write the task folder (inside the run folder) unless ``evaluator`` is a task folder used
    as it is, then ``start`` the run."""
    if evaluator is None:
        raise TypeError("run_evolution needs an evaluator: a callable f(program_path) -> dict, "
                        "an evaluator file or a task folder")
    layer: dict[str, Any] = {}
    evolution_keys = {"generations": generations, "target_score": target_score,
                      "patience": patience}
    if any(value is not None for value in evolution_keys.values()):
        layer["evolution"] = {k: v for k, v in evolution_keys.items() if v is not None}
    entry = model_entry(model, api_base, api_key_env)
    if entry is not None:
        layer["llm"] = {"models": [entry]}
    if search is not None:
        layer["search"] = {"algorithm": search}
    task_keys = {"direction": direction, "name": name}
    if any(value is not None for value in task_keys.values()):
        layer["task"] = {k: v for k, v in task_keys.items() if v is not None}
    subscribers = [on_event] if on_event is not None else None
    in_place = (initial_code is None and problem is None and language is None
                and not callable(evaluator) and Path(evaluator).is_dir())
    if in_place:  # a task folder as it is: what `cambrian run FOLDER` does
        return start(evaluator, config=_layered(config, layer), overrides=overrides,
                     run_dir=run_dir, providers=providers, subscribers=subscribers)
    target = Path(run_dir) if run_dir is not None else (
        Path("runs") / f"{name or 'evolution'}-{time.strftime('%Y%m%d-%H%M%S')}")
    _claim(target)
    made_folder = not target.exists()
    task_root = target / "task"
    if task_root.exists():
        raise RunExists(f"{task_root} exists; choose another run_dir")
    try:
        written = write_inline_task(task_root, initial_code=initial_code, evaluator=evaluator,
                                    language=language, problem=problem)
        return start(task_root, config=_layered(config, deep_merge(written.config, layer)),
                     overrides=overrides, run_dir=target, providers=providers,
                     subscribers=subscribers)
    except BaseException:
        shutil.rmtree(target if made_folder else task_root, ignore_errors=True)
        raise


def _layered(config: RunConfig | dict[str, Any] | str | Path | None,
             layer: dict[str, Any]) -> dict[str, Any]:
    """``config`` with ``layer`` on top (one dict: ``start`` takes one config layer)."""
    if isinstance(config, RunConfig):
        base = config.model_dump(exclude_unset=True)
    elif isinstance(config, dict):
        base = config
    elif config is not None:
        base = read_config_file(Path(config))
    else:
        base = {}
    return deep_merge(base, layer)


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
