"""``run_evolution``: code as a string and the evaluator as a Python callable (or an evaluator
file, or a task folder) in, the best program's code, score and metrics and the run's history
out; ``_async`` and ``stream_evolution`` for a running event loop."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cambrian.api.blocking import run_blocking
from cambrian.api.runs import RunExists, claim_folder, start
from cambrian.config import ConfigError, RunConfig
from cambrian.config.loading import deep_merge
from cambrian.core.events import Event
from cambrian.llm.base import LLMProvider
from cambrian.llm.model_files import ALIASES, LOCAL_MODELS
from cambrian.search.engine import Evolution, RunSummary
from cambrian.store.store import Store
from cambrian.task.inline import write_inline_task
from cambrian.task.peer_configs import peer_layer


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
    claim_folder(target)
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
    elif config is not None:  # an OpenEvolve or ShinkaEvolve file is translated
        base, _ = peer_layer(Path(config), Path(config).parent)
    else:
        base = {}
    return deep_merge(base, layer)
