"""Deterministic re-execution of a stored run (``cambrian replay``, :func:`replay`).

The recorded run's configuration and task build a new run in another folder, whose every model
is a :class:`~cambrian.llm.replay_provider.ReplayProvider`: each LLM request is answered with the
reply the recorded run got to the same request, and none reaches a model. Evaluations are run
again. The :class:`~cambrian.search.replay_schedule.Sequencer` lets calls return and evaluations
commit in the order the run recorded them, so a concurrent run takes the same decisions in the
same order. The two runs are then compared (``search/replay_compare.py``): the same programs,
parents, evaluations, commit order, search state and best, or what differs.

``from_evaluation=N`` replays only up to the run's N-th evaluation, then continues the replay
as a resumed run with a live model (``model``; default: the run's own models): what another
model would have done from there.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cambrian.api.blocking import run_blocking
from cambrian.api.inline import model_entry
from cambrian.api.runs import code_version, create_run, resume
from cambrian.config import ConfigError, RunConfig, build_config
from cambrian.core.events import CandidateEvaluated, SessionEnded, kind_of
from cambrian.core.objective import Objective
from cambrian.llm.base import LLMProvider, estimate_tokens
from cambrian.llm.factory import build_providers
from cambrian.llm.providers import PROVIDERS
from cambrian.llm.replay_provider import ReplayProvider, ReplyBook
from cambrian.search.build import check_names, check_task_settings
from cambrian.search.context import RunAborted
from cambrian.search.engine import Evolution
from cambrian.search.novelty import NoveltyFilter
from cambrian.search.novelty_cost import JudgeCost, RecordedJudgeCosts
from cambrian.search.replay_compare import Comparison, compare_runs
from cambrian.search.replay_schedule import (
    ReplayGate,
    ReplaySlots,
    ReplayStarted,
    ReplayStopped,
    SequencedExecutor,
    Sequencer,
    StopKind,
    Timeline,
    hold_side_steps,
)
from cambrian.store.rows import RunInfo
from cambrian.store.store import Store, StoreError
from cambrian.task.folder import load_task

REPORT_FILENAME = "replay_report.json"
REPLAY_DIFFERS = 8  # the exit code of a replay that did not reproduce its run


class ReplayError(ValueError):
    """The replay cannot be made (a missing, damaged or foreign run, a wrong option): one line."""


@dataclass(frozen=True)
class Continuation:
    """The live part of a replay (``from_evaluation``): how the resumed run ended."""

    model: str
    outcome: str
    stop_reason: str
    evaluations: int
    llm_calls: int
    best_id: int | None
    best_score: float | None
    exit_code: int


@dataclass(frozen=True)
class ReplayReport:
    """What :func:`replay` did and found. ``identical``: the replayed part reached the same
    programs, evaluations, commit order, search state and best as the recorded run."""

    source: Path
    target: Path
    until: int | None  # the last evaluation served from the trace (None: the whole run)
    stop: str  # how the served part ended (search/replay_schedule.StopKind)
    stop_reason: str
    served_calls: int  # LLM replies served from the trace
    comparison: Comparison
    notes: tuple[str, ...] = ()
    continuation: Continuation | None = None

    @property
    def identical(self) -> bool:
        return self.comparison.identical and self.stop in (StopKind.COMPLETED, StopKind.CUT,
                                                           StopKind.END_OF_TRACE)

    @property
    def differences(self) -> list[str]:
        return [d.line() for d in self.comparison.differences]

    @property
    def noisy(self) -> tuple[int, ...]:
        """Candidates the same evaluator scored differently (same program, same parents)."""
        return self.comparison.noisy

    @property
    def exit_code(self) -> int:
        if not self.identical:
            return REPLAY_DIFFERS
        return self.continuation.exit_code if self.continuation is not None else 0

    def to_json(self) -> dict[str, Any]:
        comparison = self.comparison
        return {
            "source": str(self.source), "target": str(self.target), "until": self.until,
            "stop": str(self.stop), "stop_reason": self.stop_reason,
            "served_calls": self.served_calls, "identical": self.identical,
            "compared_candidates": comparison.compared,
            "differences": [asdict(d) for d in comparison.differences],
            "noisy_candidates": list(comparison.noisy),
            "first_divergence": comparison.first_divergence,
            "best": {"original": comparison.best[0], "replay": comparison.best[1]},
            "notes": list(self.notes),
            "continuation": asdict(self.continuation) if self.continuation else None,
        }


# ---------------------------------------------------------------------------- the recorded run


@dataclass
class _Recorded:
    info: RunInfo
    timeline: Timeline
    book: ReplyBook
    file_hashes: dict[str, str]
    children: dict[tuple[str, int | None], list[int]]
    judge_costs: dict[str, list[JudgeCost]]  # how it decided whether to ask the novelty judge
    steering: list[str] = field(default_factory=list)  # what the run's trace says was changed
    sessions: int = 1


def _read(run_dir: Path) -> _Recorded:
    try:
        store = Store.open(run_dir)
    except FileNotFoundError:
        raise ReplayError(f"{run_dir} holds no run (no run.sqlite): give the folder of a run "
                          "Cambrian made") from None
    except StoreError as exc:
        raise ReplayError(str(exc)) from None
    try:
        info = store.runs.info()
        if info.framework != "cambrian":
            raise ReplayError(f"{run_dir} is a {info.framework} trace imported into Cambrian; "
                              "only a run Cambrian made can be replayed")
        book = ReplyBook.from_store(store)
        timeline = Timeline.from_store(store, book)
        if not any(entry.evaluated is not None for entry in timeline.entries):
            raise ReplayError(f"{run_dir} has no evaluation to replay")
        kinds = [kind_of(e.event) for e in store.events.list(
            "config_override", "guidance_change", "control", "session_start")]
        recorded = _Recorded(info, timeline, book, store.runs.file_hashes(),
                             timeline.children(store), RecordedJudgeCosts.read(store))
        recorded.sessions = kinds.count("session_start")
        recorded.steering = sorted({kind for kind in kinds if kind != "session_start"})
        return recorded
    except StoreError as exc:
        raise ReplayError(str(exc)) from None
    finally:
        store.close()


def _replay_config(info: RunInfo, notes: list[str]) -> RunConfig:
    """The recorded configuration, less what cannot or must not happen twice: a wall-time
    budget (time does not replay), the run's tracking export, model copies on Ray workers."""
    layer = json.loads(json.dumps(info.config))
    budget = layer.get("budget") or {}
    if budget.get("max_wall_time_s") is not None:
        notes.append("the recorded run had a wall-time budget; the replay runs without one "
                     "(choices paced by elapsed time may differ)")
        budget["max_wall_time_s"] = None
    tracking = layer.get("tracking") or {}
    if any(tracking.get(key) for key in ("mlflow", "wandb")):
        notes.append("the run's tracking export (MLflow/W&B) is left out of the replay")
        layer["tracking"] = {}
    for model in (layer.get("llm") or {}).get("models") or []:
        if int(model.get("replicas") or 1) > 1:
            notes.append(f"model '{model.get('name') or model.get('model')}' had "
                         f"{model['replicas']} copies on Ray; its replies are served here")
            model["replicas"] = 1
    try:
        return build_config([layer])
    except ConfigError as exc:
        raise ReplayError(f"the recorded run's configuration no longer loads: {exc}") from None


def _replay_providers(config: RunConfig, book: ReplyBook) -> dict[str, ReplayProvider]:
    """One replay provider per model, counting tokens as the recorded model did (a local model's
    tokenizer is loaded for it; nothing is generated)."""
    providers: dict[str, ReplayProvider] = {}
    shared: dict[str, Any] = {}
    for model in config.llm.models:
        spec = PROVIDERS.get(model.provider)
        if spec.local:
            counter: LLMProvider = spec.build(model, None, shared)
            window, count = counter.context_window, counter.count_tokens
        else:
            window, count = model.context_window, estimate_tokens
        providers[model.label] = ReplayProvider(book, model.label, model_name=model.model,
                                                context_window=window, count_tokens=count)
    return providers


def _live_model(info: RunInfo, model: str | None, api_base: str | None,
                api_key_env: str | None) -> tuple[list[str], dict[str, LLMProvider], str]:
    """The overrides and providers of the live continuation, built before anything is made so
    that a wrong model or a missing key fails first."""
    entry = model_entry(model, api_base, api_key_env)
    overrides = ["llm.models=" + json.dumps([entry])] if entry is not None else []
    resolved = build_config([info.config], overrides)
    check_names(resolved)
    providers = build_providers(resolved.llm)
    return overrides, providers, ", ".join(m.label for m in resolved.llm.models)


# ---------------------------------------------------------------------------- the replay run


def _create(target: Path, task_dir: Path, config: RunConfig,
            providers: dict[str, ReplayProvider]) -> Evolution:
    task = load_task(task_dir, config)
    check_names(config)
    check_task_settings(task)
    evolution, _ = create_run(target, task, config, dict(providers), None)
    return evolution


async def _served(evolution: Evolution, sequencer: Sequencer) -> tuple[StopKind, str]:
    """Run the replay until it ends or the sequencer stops it."""
    run = asyncio.create_task(evolution.run())
    sequencer.attach(run)
    watch = asyncio.create_task(sequencer.watch())
    try:
        summary = await run
        return StopKind.COMPLETED, summary.stop_reason
    except asyncio.CancelledError:
        if sequencer.stopped is None:
            raise
        return sequencer.stopped
    except RunAborted as exc:  # the recorded run may have stopped the same way
        return StopKind.COMPLETED, f"run stopped: {exc}"
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)


def _compare(source: Store, target: Store, recorded: _Recorded, stop: StopKind,
             cut: int | None) -> Comparison:
    objective = Objective.of(recorded.info.direction)
    entries = recorded.timeline.entries
    if cut is not None:  # what the recorded run had done by its cut
        before = entries[:cut + 1]
        candidates = [e.ref for e in before if e.kind == "candidate"]
        evaluated = [e.ref for e in before if e.kind == "commit"]
        return compare_runs(source, target, objective, candidates=candidates,
                            evaluated=evaluated, whole=False)
    ids = [row.id for row in source.candidates.list()]
    made = [row.id for row in target.candidates.list()]
    whole = stop in (StopKind.COMPLETED, StopKind.END_OF_TRACE)
    evaluated = [*ids, *made]
    if not whole:  # stopped early: compare what the replay made, and the next one it lacks,
        limit = max(made, default=0) + 1  # and the evaluations it committed before it stopped
        ids = [i for i in ids if i <= limit]
        committed = set(target.evaluations.committed_order())
        evaluated = [i for i in [*ids, *made] if i in committed]
    return compare_runs(source, target, objective, candidates=[*ids, *made],
                        evaluated=evaluated, whole=whole)


def _notes(recorded: _Recorded, target: Store, config_notes: list[str]) -> list[str]:
    notes = list(config_notes)
    if recorded.sessions > 1:
        notes.append(f"the recorded run ran in {recorded.sessions} sessions (resumed); the "
                     "replay runs it as one")
    if recorded.steering:
        notes.append(f"the recorded run was steered while it ran ({', '.join(recorded.steering)}"
                     "); the replay does not steer it again")
    now = target.runs.file_hashes()
    changed = sorted(name for name in {*recorded.file_hashes, *now}
                     if recorded.file_hashes.get(name) != now.get(name))
    if changed:
        notes.append(f"task files changed since the recorded run: {', '.join(changed)}")
    if recorded.info.code_version != code_version():
        notes.append(f"the recorded run was made by Cambrian {recorded.info.code_version}; "
                     f"this is {code_version()}")
    return notes


async def replay_async(run_dir: str | Path, *, to: str | Path,
                       from_evaluation: int | None = None, model: str | None = None,
                       api_base: str | None = None, api_key_env: str | None = None,
                       task_dir: str | Path | None = None,
                       stall_s: float = 180.0) -> ReplayReport:
    """:func:`replay` inside a running event loop."""
    source, target = Path(run_dir), Path(to)
    if source.resolve() == target.resolve():
        raise ReplayError("--to must name a new folder, not the run being replayed")
    if (model is not None or api_base is not None) and from_evaluation is None:
        raise ReplayError("--model continues a replay with a live model: give --from N too "
                          "(the evaluation to continue from)")
    recorded = _read(source)
    spent = recorded.timeline.evaluations()
    cut: int | None = None
    if from_evaluation is not None:
        if not 0 <= from_evaluation < spent:
            raise ReplayError(f"--from {from_evaluation}: the run has evaluations 0 to "
                              f"{spent} (0: its initial program); continue from one before "
                              "its last")
        cut = recorded.timeline.cut_after(from_evaluation)
    config_notes: list[str] = []
    config = _replay_config(recorded.info, config_notes)
    live = (_live_model(recorded.info, model, api_base, api_key_env)
            if from_evaluation is not None else None)
    folder = Path(task_dir) if task_dir is not None else Path(recorded.info.task_dir)
    if not folder.is_dir():
        raise ReplayError(f"the run's task folder {folder} is gone; give its new place with "
                          "--task")
    providers = _replay_providers(config, recorded.book)
    evolution = _create(target, folder, config, providers)
    sequencer = Sequencer(recorded.timeline, evolution.store, cut=cut, stall_s=stall_s,
                          evaluation_s=config.evaluation.timeout_s)
    for provider in providers.values():
        provider.turnstile = sequencer
    evolution.queue.executor = SequencedExecutor(evolution.queue.executor, sequencer)
    filters = getattr(evolution.slots.proposer, "filters", None)
    if isinstance(filters, list):  # a plugin's generator may keep none: its children race
        filters.insert(0, ReplayGate(sequencer, recorded.children))
        for novelty in (f for f in filters if isinstance(f, NoveltyFilter) and f.costs):
            novelty.costs = RecordedJudgeCosts(recorded.judge_costs, novelty.costs)
    evolution.hooks.insert(0, ReplaySlots(sequencer))
    hold_side_steps(evolution.side_work.jobs, sequencer)
    evolution.ctx.recorder.emit(ReplayStarted(
        source_run=str(source), source_id=recorded.info.id, until=from_evaluation,
        model=live[2] if live is not None else None))
    try:
        stop, reason = await _served(evolution, sequencer)
        served = sum(p.served for p in providers.values())
        evolution.ctx.recorder.emit(ReplayStopped(ended=str(stop), reason=reason, served=served))
        with Store.open(source) as original:
            comparison = _compare(original, evolution.store, recorded, stop, cut)
        notes = _notes(recorded, evolution.store, config_notes)
    finally:
        evolution.store.close()
    continuation = None
    if live is not None and stop is StopKind.CUT:
        continuation = await _continue(target, *live)
    report = ReplayReport(source, target, from_evaluation, str(stop), reason, served,
                          comparison, tuple(notes), continuation)
    (target / REPORT_FILENAME).write_text(json.dumps(report.to_json(), indent=2,
                                                     default=str) + "\n")
    return report


async def _continue(target: Path, overrides: list[str], providers: dict[str, LLMProvider],
                    label: str) -> Continuation:
    """The replay, resumed with the live model(s) from where its served part stopped."""
    evolution = resume(target, overrides=overrides, providers=providers)
    try:
        try:
            summary = await evolution.run()
            outcome, reason = summary.outcome, summary.stop_reason
        except RunAborted as exc:
            outcome, reason = exc.outcome, str(exc)
        store = evolution.store
        objective = Objective.of(store.runs.info().direction)
        best = store.candidates.best(objective)
        evaluated = store.events.of_type(CandidateEvaluated)
        ended = store.events.of_type(SessionEnded)
        return Continuation(
            model=label, outcome=ended[-1].outcome if ended else outcome.word,
            stop_reason=reason, evaluations=evaluated[-1].evaluated if evaluated else 0,
            llm_calls=store.contexts.count(), best_id=best.id if best else None,
            best_score=best.score if best else None, exit_code=outcome.exit_code)
    finally:
        evolution.store.close()


def replay(run_dir: str | Path, *, to: str | Path, from_evaluation: int | None = None,
           model: str | None = None, api_base: str | None = None,
           api_key_env: str | None = None, task_dir: str | Path | None = None,
           stall_s: float = 180.0) -> ReplayReport:
    """Re-run the stored run ``run_dir`` into the new folder ``to``, every LLM reply served from
    its trace, and compare: see :class:`ReplayReport`. ``from_evaluation=N``: serve only up to
    its N-th evaluation (0: the initial program's), then continue live with ``model`` (default:
    the run's own models; ``api_base``/``api_key_env`` as for ``cambrian run --model``).
    ``task_dir``: where the run's task folder is now, if it moved. ``stall_s``: how long the
    replay waits for a step of the recorded run that does not come (longer while an evaluation
    runs) before it stops as stalled. Blocking (inside a running
    event loop, the replay gets a loop of its own in a worker thread)."""
    return run_blocking(lambda: replay_async(
        run_dir, to=to, from_evaluation=from_evaluation, model=model, api_base=api_base,
        api_key_env=api_key_env, task_dir=task_dir, stall_s=stall_s))


__all__ = ["REPLAY_DIFFERS", "Continuation", "ReplayError", "ReplayReport", "replay",
           "replay_async"]
