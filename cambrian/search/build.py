"""The composition root: every part of a run is built here, once, and wired to the others.

Nothing else constructs the loop's parts, so this is the one place that says which hooks run
(in which order), which child filters a proposal passes, which model each side task uses, and
how the budget checks see the proposals in flight.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import cambrian.evaluate.factory
import cambrian.mutate.prompts
import cambrian.mutate.proposer  # noqa: F401  registers the default generator
from cambrian.config import RunConfig
from cambrian.config.extras import check_extras
from cambrian.core.bus import EventBus, Subscriber
from cambrian.core.components import get_component, make_component
from cambrian.core.errors import ConfigError
from cambrian.core.events import IntentBanditSnapshot
from cambrian.core.hooks import LoopHook
from cambrian.core.objective import Objective
from cambrian.core.plugins import load_plugins
from cambrian.core.registry import UnknownName
from cambrian.evaluate.devices import evaluation_slots
from cambrian.evaluate.executor import EvaluationExecutor
from cambrian.evaluate.executors import build_executor
from cambrian.evaluate.factory import device_request
from cambrian.llm.base import LLMProvider
from cambrian.llm.ensemble import Ensemble
from cambrian.llm.gateway import LLMGateway
from cambrian.llm.providers import PROVIDERS
from cambrian.meta.comprehension import ProblemComprehension, brief_approaches
from cambrian.meta.guidance import GuidanceBoard
from cambrian.meta.move_menu import MoveMenu
from cambrian.meta.prompt_archive import build_prompt_archive
from cambrian.meta.reflection import build_reflection
from cambrian.meta.scratchpad import build_scratchpad
from cambrian.mutate.filters import ChildFilter
from cambrian.mutate.formats.registry import REPLY_FORMATS
from cambrian.mutate.intent_bandit import IntentBandit
from cambrian.mutate.intents import INTENTS, check_intent_names
from cambrian.mutate.proposer import Generator
from cambrian.mutate.schedule import build_mutation_schedule
from cambrian.mutate.step.wiring import given_score_error
from cambrian.mutate.strategies import STEP_MOVES, StrategyMenu, general_strategies
from cambrian.search.archive import Archive
from cambrian.search.budget import BudgetManager
from cambrian.search.commit import Committer
from cambrian.search.context import LoopCounters, Progress, RunContext
from cambrian.search.control import RunControl
from cambrian.search.decomposition_wiring import build_decomposition
from cambrian.search.engine import Evolution
from cambrian.search.environment_watch import EnvironmentWatch
from cambrian.search.evaluations import EvaluationQueue, evaluate_once
from cambrian.search.hooks import HookServices, case_evaluator
from cambrian.search.niches.wiring import build_niches, check_niches
from cambrian.search.novelty import NoveltyIndexing, build_novelty_filter
from cambrian.search.phases import PhaseController
from cambrian.search.preflight import Preflight
from cambrian.search.prelude import FirstProgramHook
from cambrian.search.proposals import ProposalSlots
from cambrian.search.quality_rating import QualityRatedExecutor
from cambrian.search.recycling import build_deletion_filter, parent_view
from cambrian.search.registry import (
    check_database_keys,
    get_algorithm,
    make_hooks,
    make_selector,
)
from cambrian.search.requests import RequestBuilder
from cambrian.search.step_score_check import StepScoreCheck
from cambrian.search.stoppers import Stoppers, StopRule
from cambrian.search.tune_step import build_tune_operator
from cambrian.search.ui_columns import UIColumnsHook
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store
from cambrian.task.folder import Task
from cambrian.tracking.tracker import build_tracker

if TYPE_CHECKING:
    from cambrian.evaluate.distributed.llm_replicas import ModelReplicas

log = logging.getLogger(__name__)


def check_task_settings(task: Task, config: RunConfig | None = None) -> None:
    """The settings naming task files that only the task can confirm: the improvement step's
    score the task gives must wire to its initial program; a decomposition's combiner must be
    a file of the task folder."""
    combiner = config.decomposition.combiner if config is not None else None
    if combiner is not None:
        path = (task.root / combiner).resolve()
        if not path.is_file() or not path.is_relative_to(task.root.resolve()):
            raise ConfigError(f"decomposition.combiner: '{combiner}' is not a file of the task "
                              f"folder {task.root}")
    if task.step_score is not None:
        if error := given_score_error(task.initial_source, task.step_score, task.language):
            raise ConfigError(error)


def check_names(config: RunConfig, *, new_run: bool = False) -> None:
    """Every name the configuration gives that a registry resolves (providers, reply formats,
    the search algorithm and components), so a misspelt one fails before anything is made,
    with the nearest registered name. ``new_run``: the configuration is as the user wrote it
    (a resumed run's is stored whole), so a ``database.*`` key the algorithm does not read is
    refused even at its default value."""
    for index, model in enumerate(config.llm.models):
        for setting, registry, name in (("provider", PROVIDERS, model.provider),
                                        ("patch_format", REPLY_FORMATS, model.patch_format)):
            if name == "auto" and setting == "patch_format":
                continue
            try:
                registry.get(name)
            except UnknownName as exc:
                raise ConfigError(f"llm.models[{index}].{setting}: {exc}") from None
    labels = {model.label for model in config.llm.models}
    for phase, wanted in config.phases.models.items():
        for label in wanted:
            if label not in labels:
                raise ConfigError(f"phases.models.{phase}: no model is labelled '{label}' "
                                  f"(llm.models labels: {', '.join(sorted(labels))})")
    if config.decomposition.model is not None and config.decomposition.model not in labels:
        raise ConfigError(f"decomposition.model: no model is labelled "
                          f"'{config.decomposition.model}' (llm.models labels: "
                          f"{', '.join(sorted(labels))})")
    for intent, wanted in config.mutation.intent_models.items():
        for label in wanted:
            if label not in labels:
                raise ConfigError(f"mutation.intent_models.{intent}: no model is labelled "
                                  f"'{label}' (llm.models labels: {', '.join(sorted(labels))})")
    for key in ("types", "opening"):
        check_intent_names(f"mutation.{key}", getattr(config.mutation, key))
    check_replicas(config)
    make_selector(config)
    if new_run:
        check_database_keys(get_algorithm(config.search.algorithm), config.database,
                            given_keys=True)
    for kind in ("context_builder", "generator", "evaluator"):
        get_component(kind, getattr(config.search, kind))
    check_niches(config)
    check_extras(config)  # an optional dependency the config needs, e.g. llama.cpp
    check_devices(config)


def with_algorithm_features(config: RunConfig) -> RunConfig:
    """The run's configuration with the loop parts its search algorithm turns on (``contest``:
    niches, phases, reflection) enabled; their settings stay the sections' own."""
    features = get_algorithm(config.search.algorithm).features
    update = {name: getattr(config, name).model_copy(update={"enabled": True})
              for name in ("niches", "phases", "reflection")
              if name in features and not getattr(config, name).enabled}
    decomposition = config.decomposition
    if "decomposition" in features and not decomposition.subproblems \
            and not decomposition.propose:
        update["decomposition"] = decomposition.model_copy(update={"propose": True})
    return config.model_copy(update=update) if update else config


def check_devices(config: RunConfig) -> None:
    """GPUs the task asks for: this machine must offer them (unless its fallback is the CPU);
    a judged task's compiled programs hold none."""
    if config.evaluation.devices.gpu and config.judge is not None:
        raise ConfigError("evaluation.devices.gpu: a judged task's programs run on the CPU; "
                          "evaluate GPU code with an evaluator script instead of judge:")
    if config.execution.backend == "local":
        device_request(config.evaluation.devices)  # Ray's GPUs are the cluster's


def check_replicas(config: RunConfig) -> None:
    """``llm.models[].replicas`` > 1 runs the model's copies on the Ray cluster of the run's
    evaluations (the model section alone cannot see ``execution``)."""
    for index, model in enumerate(config.llm.models):
        if model.replicas > 1 and config.execution.backend != "ray":
            raise ConfigError(f"llm.models[{index}].replicas: {model.replicas} replicas run on "
                              "Ray workers; set execution.backend: ray (or replicas: 1)")


def model_replicas(config: RunConfig, providers: dict[str, LLMProvider],
                   executor: EvaluationExecutor) -> ModelReplicas | None:
    """The hook serving each model with ``replicas`` > 1 from a pool of Ray actors (its
    ``pools`` replace those models' providers), or None when no model has replicas."""
    models = [m for m in config.llm.models if m.replicas > 1]
    if not models:
        return None
    check_replicas(config)
    from cambrian.evaluate.distributed.llm_replicas import ModelReplicas  # imports Ray

    return ModelReplicas.build(models, providers, executor, config.execution)


def rated(executor: EvaluationExecutor, config: RunConfig, gateway: LLMGateway, task: Task,
          objective: Objective) -> EvaluationExecutor:
    """The children's executor: with ``evaluation.llm_feedback_weight``, a correct child's
    score blended with an LLM's rating of its code quality (``quality_rating.py``)."""
    weight = config.evaluation.llm_feedback_weight
    if weight <= 0:
        return executor
    label = gateway.label(config.evaluation.llm_feedback_model, "evaluation.llm_feedback_model")
    return QualityRatedExecutor(executor, gateway, label, weight, task.language.name, objective)


def build_evolution(run_dir: Path, task: Task, config: RunConfig, store: Store,
                    providers: dict[str, LLMProvider], evaluator: Any, *,
                    executor: EvaluationExecutor | None = None,
                    subscribers: Iterable[Subscriber] = ()) -> Evolution:
    """A run ready to ``await evolution.run()``. ``evaluator``: anything with
    ``async evaluate(source, work_dir)`` (see ``cambrian/evaluate/executor.py``)."""
    load_plugins(config.search.plugins)  # they may register components used below
    config = with_algorithm_features(config)
    bus = EventBus()
    for subscriber in subscribers:
        bus.subscribe(subscriber)
    recorder = Recorder(store, bus)
    tracker = build_tracker(config, store, run_dir, task.name)  # MLflow / W&B export
    if tracker is not None:
        bus.subscribe(tracker)
    objective = Objective.of(task.direction)
    counters = LoopCounters()
    budget = BudgetManager(config.budget, store, config.evolution.generations)
    executor = executor or build_executor(config, evaluator)  # execution.backend
    replicas = model_replicas(config, providers, executor)  # on the executor's Ray cluster
    if replicas is not None:
        providers = {**providers, **replicas.pools}
    gateway = LLMGateway(
        config.llm.models, providers, recorder,
        budget=budget.stop_reason, max_reply_chars=config.llm.max_reply_chars)
    # The GPUs the evaluator leases from (none on Ray, whose GPUs are the cluster's).
    pool = getattr(evaluator, "devices", None) if config.execution.backend == "local" else None
    slots = (evaluation_slots(config.evolution.max_parallel_evaluations, pool.per_evaluation,
                              len(pool.gpus), pool.share)
             if pool is not None else config.evolution.max_parallel_evaluations)
    if slots < config.evolution.max_parallel_evaluations:
        log.info("evaluations run %d at a time: one per %d GPU(s) of this machine", slots,
                 config.evaluation.devices.gpu)
        config = config.model_copy(update={"evolution": config.evolution.model_copy(
            update={"max_parallel_evaluations": slots})})
    ctx = RunContext(run_dir, task, config, store, recorder, gateway, budget, objective, counters)
    rng = np.random.default_rng(config.evolution.seed)
    saved_rng = store.state.get("rng")
    if saved_rng is not None:
        rng.bit_generator.state = saved_rng
    ensemble = Ensemble(config.llm)
    ensemble.load_state(store.state.get("ensemble", {}))
    selector = make_selector(config)
    archive = Archive(selector, objective, config.evolution.seed)
    hooks: list[LoopHook] = [replicas] if replicas is not None else []
    progress = Progress(store, hooks)
    bus.subscribe(progress.follow)

    def search_state() -> dict[str, Any]:
        return archive.state(rng, hooks, ensemble.state())

    # The evaluated event a commit emits counts the evaluation it commits (the counts follow
    # the published events, so they see it only after the commit).
    committer = Committer(ctx, archive, ensemble, search_state,
                          lambda: progress.evaluations_spent(committing=1))

    # Child filters, in the order a proposal passes them, with their rejections per generation.
    feedback = config.trace_feedback  # what the trace analyses feed back (seed 001 §6)
    deletion_filter = build_deletion_filter(feedback, store, task.language.name)
    novelty = build_novelty_filter(config, recorder, gateway, task.language)
    filters: list[ChildFilter] = [f for f in (deletion_filter, novelty) if f is not None]
    allowances = {"deletion": feedback.max_rejections, "novelty": config.novelty.max_attempts}
    if novelty is not None:  # a migrated program joins its new island's index
        bus.subscribe(novelty.follow)
    novelty_hook = NoveltyIndexing(novelty) if novelty is not None else None

    schedule = build_mutation_schedule(config, store, objective, budget.progress)

    def reply_refused(tags: dict[str, Any]) -> None:
        if schedule is not None and tags.get("intent"):
            schedule.record(str(tags["intent"]), False, 0.0, int(tags.get("island") or 0))

    if schedule is not None:  # the intent bandit's shares, as typed events for `status`
        def intent_snapshot(snapshot: dict[str, Any]) -> None:
            recorder.emit(IntentBanditSnapshot(**snapshot))  # joins a commit's transaction
        schedule.on_snapshot = intent_snapshot

    proposer: Generator = make_component(
        "generator", config.search.generator, Generator, task=task, config=config,
        gateway=gateway, recorder=recorder, filters=filters, on_reply_refused=reply_refused)

    # Loop hooks, in the order the engine consults them.
    def prepare_budget() -> str | None:
        return budget.stop_reason(0)

    mutation = config.mutation
    strategies = (StrategyMenu(
        [*mutation.strategies,
         *(general_strategies(task.language) if mutation.general_strategies else ())],
        store, objective,
        moves=[*mutation.improve_moves, *(STEP_MOVES if mutation.general_moves else ())],
        move_bandit=(IntentBandit([], exploration=mutation.bandit_exploration,
                                  floor=mutation.floor) if mutation.intent_bandit else None))
        if schedule is not None and any(INTENTS.get(name).draws_method
                                        for name in config.mutation.types) else None)

    def set_brief(brief: str | None) -> None:
        proposer.prompts.brief = brief
        if strategies is not None:
            strategies.add(brief_approaches(store))

    queue = EvaluationQueue(ctx, rated(executor, config, gateway, task, objective), committer,
                            hooks, EnvironmentWatch(ctx))
    hooks.append(Preflight(ctx, queue))
    comprehension = ProblemComprehension(
        config.comprehension, task, gateway, recorder,
        gateway.label(config.comprehension.model, "comprehension.model"), run_dir,
        budget_check=prepare_budget, on_brief=set_brief)
    hooks.append(comprehension)
    hooks.append(FirstProgramHook(ctx, executor, committer, lambda: proposer.prompts.brief,
                                  prepare_budget))
    if (strategies is not None and "improve_step" in mutation.types
            and mutation.derive_moves and not mutation.improve_moves):
        def initial_source() -> str | None:  # read when the hook prepares: after the first program
            initial = store.candidates.find(1)
            return initial.source if initial is not None else None

        hooks.append(MoveMenu(
            task, gateway, recorder, gateway.label(config.comprehension.model,
                                                   "comprehension.model"),
            initial_source=initial_source, budget_check=prepare_budget,
            on_moves=strategies.add_moves))
    if novelty_hook is not None:  # indexes the initial program, once it exists
        hooks.append(novelty_hook)

    async def trial(source: str, work_dir: Path) -> Any:
        return (await evaluate_once(executor, source, work_dir)).result

    tuner = build_tune_operator(
        feedback, recorder, trial, language=task.language.name,
        objective=objective, seed=config.evolution.seed, work_root=ctx.work_root,
        stop=lambda: budget.stop_reason(), record_child=committer.direct_child)
    score_check = (StepScoreCheck(recorder, trial, language=task.language.name,
                                  count=config.mutation.score_check, objective=objective,
                                  given_score=task.step_score)
                   if schedule is not None and "improve_step" in config.mutation.types
                   and config.mutation.score_check > 0 else None)
    scratchpad = build_scratchpad(config, gateway, recorder, run_dir, objective)
    # Self-reflection: its notes follow the scratchpad's (a tight prompt keeps the scratchpad's).
    reflection = build_reflection(config, gateway, recorder, objective,
                                  task.problem_statement or "")
    evaluate_cases, case_ids = case_evaluator(executor.evaluator)  # a judge sent out too
    algorithm_hooks = make_hooks(config, selector, HookServices(
        store=store, objective=objective, problem=task.problem_statement or "", gateway=gateway,
        model_label=gateway.label(config.meta.model, "meta.model"),
        record_child=committer.direct_child, evaluate_cases=evaluate_cases, case_ids=case_ids))
    prompt_archive = build_prompt_archive(config, gateway, recorder,
                                          proposer.prompts.default_preamble(), objective,
                                          task.problem_statement or "")
    tagger = build_niches(config, selector, gateway, recorder, objective,  # strategy niches
                          task.language.fence_tag)
    phases = (PhaseController(
        config.phases, store, recorder, objective, evaluated=progress.evaluations_spent,
        budget_position=budget.position,
        niche_count=(lambda: len(set(tagger.book.families().values())))
        if tagger is not None else lambda: None)
        if config.phases.enabled else None)
    decomposition = build_decomposition(
        config, task, store, recorder, objective, gateway, work_root=ctx.work_root,
        run_dir=run_dir, record_child=committer.direct_child,
        families=tagger.book.families if tagger is not None else dict)
    if decomposition is not None:
        committer.listeners.append(lambda row, record: decomposition.observe(row.id))
    hooks.extend(h for h in (tuner, score_check, scratchpad, reflection, algorithm_hooks, prompt_archive,
                             tagger, phases, decomposition) if h is not None)
    hooks.append(UIColumnsHook(store))  # the web UI's columns, written with each snapshot

    guidance = GuidanceBoard(recorder, run_dir)
    requests = RequestBuilder(
        config, store, rng, lambda: parent_view(archive.selector, deletion_filter),
        progress.evaluations_spent, guidance=guidance, hooks=hooks, mutation_schedule=schedule,
        strategies=strategies, language=task.language, objective=objective,
        given_score=task.step_score)
    committer.listeners.append(lambda row, record: requests.forget(row.id))
    if schedule is not None:
        committer.listeners.append(lambda row, record: schedule.observe(row))
    stoppers = Stoppers(config.evolution, objective, progress.evaluations_spent)
    bus.subscribe(stoppers.follow)
    stop_rule = StopRule(ctx, stoppers)
    slots = ProposalSlots(ctx, archive, hooks, requests, proposer, ensemble, allowances,
                          progress, stop_rule.reason, search_state)
    control = RunControl(recorder, config, budget, run_dir)
    return Evolution(ctx, archive, hooks, progress, slots, queue, executor, search_state,
                     control, stop_rule)
