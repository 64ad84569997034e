"""The evolution loop: one asyncio loop that keeps evaluation workers busy while new proposals are
generated (seed 000 Appendix A), committing every result to the run store as it lands.

Resuming is reopening the store: the archive, RNG state and counters are rebuilt from it, pending
children are re-queued for evaluation, and numbering continues where it stopped.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from cambrian.components import make_component
from cambrian.config import RunConfig
from cambrian.evaluate.judge.tiers import evaluation_warnings, is_screened, stage_results
from cambrian.evaluate.result import EvaluationResult, case_scores
from cambrian.guidance import GuidanceBoard
from cambrian.evaluate.runner import ProgramEvaluator
from cambrian.llm.bandit import reward_improvement
from cambrian.llm.base import LLMProvider
from cambrian.llm.ensemble import Ensemble
from cambrian.mutate.proposer import Proposer
from cambrian.mutate.schedule import build_mutation_schedule
from cambrian.search.algorithm import ProgramRecord, Selector, commit_rng
from cambrian.search.budget import BudgetManager
from cambrian.meta.prompt_archive import build_prompt_archive
from cambrian.meta.scratchpad import build_scratchpad
from cambrian.search.novelty import build_novelty_filter
from cambrian.search.recycling import build_deletion_filter, parent_view
from cambrian.search.hooks import Assistant, HookServices, LoopHooks, hook_services
from cambrian.search.registry import load_plugins, make_hooks, make_selector
from cambrian.search.requests import RequestBuilder
from cambrian.search.side_work import PeriodicJob, SideWork
from cambrian.search.tune_step import build_tune_operator
from cambrian.search.snapshot import save_snapshot, verify_snapshot
from cambrian.store.store import EVALUATED_STATUSES, CandidateRow, Store, source_hash
from cambrian.task.folder import Task

EventCallback = Callable[[str, dict[str, Any]], None]
MAX_CONSECUTIVE_FAILED_SLOTS = 10
# Children screened out before full evaluation (e.g. GEPA's minibatch test) are expected to be
# common, so they stop the run only after a much longer unbroken series.
MAX_CONSECUTIVE_SCREENED_OUT = 40
MIN_TUNE_TRIALS = 3  # fewer evaluations left than this: no tune step (too few to search)
BANDIT_SNAPSHOT_EVERY = 5  # completed pulls between snapshots of the arm statistics


class RunAborted(RuntimeError):
    """The run cannot continue (e.g. the LLM rejects every request); the store stays valid."""


@dataclass(frozen=True)
class RunSummary:
    run_dir: Path
    best_id: int | None
    best_score: float | None
    initial_score: float | None
    evaluations: int  # against evolution.generations: evaluated children plus tune trials
    llm_calls: int
    stop_reason: str
    tune_trials: int = 0


class Evolution:
    def __init__(
        self,
        run_dir: Path,
        task: Task,
        config: RunConfig,
        store: Store,
        providers: dict[str, LLMProvider],
        evaluator: ProgramEvaluator | Any,  # anything with ``async evaluate(source, work_dir)``
        on_event: EventCallback | None = None,
    ) -> None:
        load_plugins(config.search.plugins)  # they may register components used below
        self.run_dir = run_dir
        self.task = task
        self.config = config
        self.store = store
        self.evaluator = evaluator
        self.on_event = on_event or (lambda kind, data: None)
        self.maximize = task.direction == "maximize"
        self.rng = np.random.default_rng(config.evolution.seed)
        saved_rng = store.get_state("rng")
        if saved_rng is not None:
            self.rng.bit_generator.state = saved_rng
        self.ensemble = Ensemble(config.llm, providers)
        self.novelty = build_novelty_filter(  # its judge call belongs to a proposal in flight
            config, store, self.ensemble, lambda: self.budget.stop_reason(self._proposals_in_flight),
            task.language)
        self.scratchpad = build_scratchpad(config, store, self.ensemble, run_dir, self.maximize,
                                           self._side_call_stop)
        self.mutation_schedule = build_mutation_schedule(config, store, self.maximize)
        feedback = config.trace_feedback  # what the trace analyses feed back (seed 001 §6)
        self.deletion_filter = build_deletion_filter(feedback, store, task.language.name)
        self.tuner = build_tune_operator(
            feedback, store, evaluator.evaluate, language=task.language.name,
            maximize=self.maximize, seed=config.evolution.seed, work_root=run_dir / "work",
            stop=lambda: self.budget.stop_reason(), record_child=self._record_direct_child,
            on_event=lambda kind, data: self.on_event(kind, data))
        self.proposer: Proposer = make_component(
            "generator", config.search.generator, task=task, config=config, store=store,
            ensemble=self.ensemble,
            budget_check=lambda: self.budget.stop_reason(self._proposals_in_flight),
            novelty=self.novelty, deletion_filter=self.deletion_filter,
            on_reply_refused=self._reply_refused,
        )
        self.selector: Selector = make_selector(config)
        self.hook_services = self._hook_services()
        self.hooks: LoopHooks | None = make_hooks(config, self.selector, self.hook_services)
        self.guidance = GuidanceBoard(store, run_dir)
        self.prompt_archive = build_prompt_archive(
            config, store, self._assistant(config.prompt_evolution.model),
            self.proposer.prompts.default_preamble(), self.maximize)
        self._best_fitness: float | None = None
        self._inflight_sources: dict[str, asyncio.Future[EvaluationResult]] = {}
        self._proposals_in_flight = 0
        self._failed_slots = 0
        self._screened_out = 0
        self._last_errors: list[str] = []
        self.budget = BudgetManager(config.budget, store, config.evolution.generations)
        self.requests = RequestBuilder(
            config, store, self.rng, lambda: parent_view(self.selector, self.deletion_filter),
            self.evaluated_children,
            guidance=self.guidance, scratchpad=self.scratchpad,
            mutation_schedule=self.mutation_schedule, prompt_archive=self.prompt_archive,
            maximize=self.maximize,
        )
        self.side_work = SideWork(self._side_jobs(), self._side_call_stop)

    def _reply_refused(self, tags: dict[str, Any]) -> None:
        if self.mutation_schedule is not None and tags.get("intent"):
            self.mutation_schedule.record(str(tags["intent"]), False)

    # ------------------------------------------------------------------ fitness

    def fitness(self, score: float) -> float:
        """Archive fitness is 'higher is better' whatever the task's direction."""
        return score if self.maximize else -score

    def _better(self, a: float | None, b: float | None) -> bool:
        if a is None:
            return False
        return b is None or (a > b if self.maximize else a < b)

    # ------------------------------------------------------------------ state

    def _record(self, row: CandidateRow, result: EvaluationResult) -> ProgramRecord:
        correct = row.status == "correct" and row.score is not None
        return ProgramRecord(
            id=row.id, parent_id=row.parent_id, island=row.island or 0,
            generation=row.generation, correct=correct,
            fitness=self.fitness(row.score) if correct else None,  # type: ignore[arg-type]
            metrics=dict(result.public), case_scores=case_scores(result),
            code_length=len(row.source or ""),
        )

    def _take_in(self, record: ProgramRecord) -> list[tuple[str, dict[str, Any]]]:
        events = self.selector.add(record, commit_rng(self.config.evolution.seed, record.id))
        if record.correct and record.fitness is not None and (
                self._best_fitness is None or record.fitness > self._best_fitness):
            self._best_fitness = record.fitness
        return [(e.kind, e.payload) for e in events]

    def _assistant(self, label: str | None) -> Assistant:
        """An LLM for the run's own requests: the model labelled ``label``, else the first."""
        model = next((m for m in self.config.llm.models if m.label == label),
                     self.config.llm.models[0])
        return Assistant(self.store, self.ensemble.providers[model.label], model.label,
                         model.provider == "local", self._side_call_stop)

    def _hook_services(self) -> HookServices:
        return hook_services(self.evaluator, self.store, self.maximize,
                             self.task.problem_statement or "", self._assistant(self.config.meta.model))

    def _restore(self) -> None:
        """Rebuild the selector by replaying every committed evaluation in order."""
        self.selector = make_selector(self.config)
        self.hooks = make_hooks(self.config, self.selector, self.hook_services)
        self._best_fitness = None
        for row, result in self.store.evaluated_in_commit_order():
            self._take_in(self._record(row, result))
        for parent_id, count in self.store.children_counts().items():
            program = self.selector.programs.get(parent_id)
            if program is not None:
                program.children = count
        self.selector.load_state(self.store.get_state("selector", {}))
        if self.hooks is not None:
            self.hooks.load_state(self.store.get_state("hooks", {}))
        self.ensemble.load_state(self.store.get_state("ensemble", {}))
        verify_snapshot(self.store, self.selector)  # replay rebuilt the stored archive?
        if self.novelty is not None:
            self.novelty.index = type(self.novelty.index)()
            self.novelty.restore()

    def _save_search_state(self) -> None:
        self.store.put_state("rng", self.rng.bit_generator.state)
        self.store.put_state("selector", self.selector.state())
        if self.hooks is not None:
            self.store.put_state("hooks", self.hooks.state())
        self.store.put_state("ensemble", self.ensemble.state())
        save_snapshot(self.store, self.selector)

    # ------------------------------------------------------------------ budget

    def children_evaluated(self) -> int:
        """Children evaluated so far (the initial program excluded)."""
        return max(0, self.store.count(*EVALUATED_STATUSES) - 1)

    def evaluated_children(self) -> int:
        """Evaluations spent against ``evolution.generations``: children plus tune trials."""
        return self.children_evaluated() + (self.tuner.trials if self.tuner is not None else 0)

    def stop_reason(self, launching: int = 0) -> str | None:
        """Why no new proposal may start (``launching``: proposals about to start)."""
        reason = self.budget.stop_reason(self._proposals_in_flight + launching)
        if reason is not None:
            return reason
        if self._screened_out >= MAX_CONSECUTIVE_SCREENED_OUT:
            return (f"the last {self._screened_out} children were all screened out before full "
                    "evaluation")
        if self._failed_slots >= MAX_CONSECUTIVE_FAILED_SLOTS:
            return (f"the last {self._failed_slots} proposals produced no usable program; "
                    f"last errors: {' | '.join(self._last_errors[-3:])}")
        return None

    def _side_call_stop(self) -> str | None:
        """Why no LLM call outside a proposal (scratchpad, prompt rewrite, hook step) may start."""
        return self.budget.stop_reason(self._proposals_in_flight + 1)

    def _choose_arm(self) -> Any:
        allowed = None
        if self.budget.behind_schedule(self.evaluated_children()):
            allowed = self.budget.cheaper_arms({a.key: a.model.label for a in self.ensemble.arms})
        return self.ensemble.choose(self.rng, allowed)

    def _may_launch(self) -> bool:
        pending = self.store.count("pending")
        committed = self.evaluated_children() + pending
        return (
            not self.side_work.blocking()  # the next prompts should see its outcome
            and self._proposals_in_flight < self.config.evolution.max_proposals_in_flight
            # Proposals keep the evaluation workers busy but never run far ahead of the
            # results they should learn from.
            and pending + self._proposals_in_flight
            <= self.config.evolution.max_parallel_evaluations
            and committed + self._proposals_in_flight < self.config.evolution.generations
            and self.stop_reason(launching=1) is None
        )

    # ------------------------------------------------------------------ side work

    def _side_jobs(self) -> list[PeriodicJob]:
        jobs = []
        if self.scratchpad is not None:
            jobs.append(PeriodicJob("scratchpad", self.scratchpad.due, self.scratchpad.update,
                                    blocks_proposals=True))
        if self.hooks is not None:
            jobs.append(PeriodicJob("algorithm hooks", lambda n: self.hooks.due(n),  # type: ignore[union-attr]
                                    self._hook_step, blocks_proposals=True))
        if self.prompt_archive is not None:
            archive = self.prompt_archive
            jobs.append(PeriodicJob(
                "prompt evolution", archive.due,
                lambda n: archive.mutate(n, self.task.problem_statement or ""),
                blocks_proposals=False))
        return jobs

    async def _hook_step(self, evaluated: int) -> None:
        assert self.hooks is not None
        events = await self.hooks.step(evaluated)
        with self.store.transaction():
            for event in events:
                self.store.add_event(event.kind, event.payload)
            self._save_search_state()
        for event in events:
            self.on_event(event.kind, event.payload)

    # ------------------------------------------------------------------ proposals

    async def _proposal_slot(self, generation: int) -> int | None:
        """One generation's proposal; the caller counted it in ``_proposals_in_flight``."""
        try:
            # This slot is in flight already: what is left beyond it goes to trials.
            allowance = (self.config.evolution.generations - self.evaluated_children()
                         - self.store.count("pending") - self._proposals_in_flight)
            if (self.tuner is not None and allowance >= MIN_TUNE_TRIALS
                    and self.tuner.due(self.children_evaluated())):
                tuned = await self.tuner.run(generation, self.selector.programs,
                                             self.children_evaluated(), allowance)
                if tuned is not None:  # else: nothing improved; an ordinary proposal follows
                    return tuned
            direct = self.hooks.direct_child(self.rng) if self.hooks is not None else None
            if direct is not None:
                return self._record_direct_child(generation, direct)
            resamples, rejections, recycled = 0, 0, 0
            while resamples < self.config.evolution.max_patch_resamples:
                request = self.requests.next(generation)
                if rejections >= self.config.novelty.max_attempts:
                    request = replace(request, check_novelty=False)
                if recycled >= self.config.trace_feedback.max_rejections:
                    request = replace(request, check_recycling=False)
                arm = self._choose_arm()
                outcome = await self.proposer.propose(request, arm)
                self._last_errors = (self._last_errors + outcome.errors)[-5:]
                if outcome.fatal:
                    raise RunAborted(outcome.fatal)
                if outcome.budget_exhausted:
                    return None
                if outcome.candidate_id is not None:
                    self.selector.on_child(request.parent.id)
                    self.on_event("proposed", {"candidate_id": outcome.candidate_id,
                                               "kind": request.kind, "model": arm.key})
                    return outcome.candidate_id
                self.ensemble.observe(arm.key, 0.0)  # a pull that produced nothing new
                self.store.put_state("ensemble", self.ensemble.state())
                self.on_event("proposal_failed", {"errors": outcome.errors, "model": arm.key})
                if outcome.recycled:
                    recycled += 1  # so have the deletion filter's
                elif outcome.rejected:
                    rejections += 1  # novelty rejections have their own allowance
                else:
                    resamples += 1
                if self.stop_reason() is not None:
                    break
            self._failed_slots += 1
            return None
        finally:
            self._proposals_in_flight -= 1

    def _record_direct_child(self, generation: int, child: Any) -> int | None:
        if self.store.find_by_source(child.source) is not None:
            return None
        parent = self.selector.programs.get(child.parent_id)
        island = parent.island if parent is not None else 0
        with self.store.transaction():
            candidate_id = self.store.add_candidate(
                generation=generation, island=island, parent_id=child.parent_id,
                operator=child.operator, status="pending", language=self.task.language.name,
                source=child.source, description=child.description,
                notes={"llm_free": True, "other_parents": list(child.other_parent_ids),
                       **child.notes},
            )
            self.store.add_edge(child.parent_id, candidate_id, "parent", child.operator)
            for other in child.other_parent_ids:
                self.store.add_edge(other, candidate_id, "parent", child.operator)
        self.selector.on_child(child.parent_id)
        self.on_event("proposed", {"candidate_id": candidate_id, "kind": child.operator,
                                   "model": None})
        return candidate_id

    # ------------------------------------------------------------------ evaluation

    async def _evaluate(self, row: CandidateRow) -> None:
        assert row.source is not None
        digest = row.source_hash or source_hash(row.source)
        earlier = self.store.find_evaluated(digest)
        if earlier is None and digest in self._inflight_sources:
            await asyncio.shield(self._inflight_sources[digest])
            earlier = self.store.find_evaluated(digest)
        if earlier is not None and earlier.id != row.id:
            self._commit_duplicate(row, earlier)
            return
        future: asyncio.Future[EvaluationResult] = asyncio.get_running_loop().create_future()
        self._inflight_sources[digest] = future
        work_dir = self.run_dir / "work" / str(row.id)
        try:
            if self.hooks is not None:
                reason = await self.hooks.screen(row.source, row.parent_id, work_dir)
                if reason is not None:
                    self._commit_screened_out(row, reason)
                    future.cancel()
                    return
            result = await self.evaluator.evaluate(row.source, work_dir)
            self._commit(row, result)
            future.set_result(result)
        finally:
            self._inflight_sources.pop(digest, None)
            if not future.done():
                future.cancel()
            shutil.rmtree(work_dir, ignore_errors=True)

    def _credit_arm(self, row: CandidateRow, record: ProgramRecord) -> None:
        """Bandit reward of the arm that proposed ``row`` (seed 000 §3.3)."""
        arm = row.notes.get("arm")
        if arm is None or row.parent_id is None:
            return
        parent = self.selector.programs.get(row.parent_id)
        initial = self.selector.programs.get(1)
        improvement = reward_improvement(
            record.fitness,
            parent.fitness if parent is not None else None,
            initial.fitness if initial is not None else None,
        )
        self.ensemble.observe(arm, improvement)
        snapshot = self.ensemble.snapshot(every=BANDIT_SNAPSHOT_EVERY)
        if snapshot is not None:
            self.store.add_event("bandit", snapshot)

    def _commit_screened_out(self, row: CandidateRow, reason: str) -> None:
        self._screened_out += 1
        with self.store.transaction():
            self.store.update_candidate(row.id, status="rejected", error=reason[:4000],
                                        notes={**row.notes, "screened_out": True})
            self._save_search_state()
        self.on_event("screened_out", {"candidate_id": row.id, "reason": reason})

    def _commit_duplicate(self, row: CandidateRow, earlier: CandidateRow) -> None:
        self._failed_slots += 1  # a generation spent on a program we already had
        with self.store.transaction():
            self.store.update_candidate(
                row.id, status="duplicate", score=earlier.score,
                notes={**row.notes, "duplicate_of": earlier.id},
            )
        self.on_event("duplicate", {"candidate_id": row.id, "duplicate_of": earlier.id})

    def _commit(self, row: CandidateRow, result: EvaluationResult) -> None:
        self._failed_slots = 0
        self._screened_out = 0
        correct = result.correct and result.combined_score is not None
        # Screened at a tiered quick stage: no full-set score, so no fitness (judge/tiers.py).
        status = "screened" if is_screened(result) else "correct" if correct else "incorrect"
        warnings = [(kind, {**payload, "candidate_id": row.id})
                    for kind, payload in evaluation_warnings(result)]  # e.g. remote scorer down
        previous_best = self._best_fitness
        with self.store.transaction():
            for kind, payload in warnings:
                self.store.add_event(kind, payload)
            for stage, stage_result in stage_results(result):  # tiered evaluation: one row each
                self.store.add_evaluation(row.id, stage_result, stage=stage)
            self.store.add_evaluation(row.id, result)  # "main", last: what the search uses
            self.store.update_candidate(row.id, status=status, score=result.combined_score,
                                        error=result.error[:4000])
            committed = self.store.candidate(row.id)
            record = self._record(committed, result)
            self._credit_arm(committed, record)
            if self.mutation_schedule is not None:
                self.mutation_schedule.observe(committed)
            for kind, payload in self._take_in(record):
                self.store.add_event(kind, payload)
                if self.novelty is not None:  # a migrated program joins its new island's index
                    self.novelty.follow(kind, payload)
            self._save_search_state()
        self.requests.forget(row.id)
        for kind, payload in warnings:
            self.on_event(kind, payload)
        if self._best_fitness is not None and self._best_fitness != previous_best:
            self._write_best(row.id)
        self.on_event("evaluated", {
            "candidate_id": row.id, "status": result.status, "score": result.combined_score,
            "best_score": self.best_score(), "evaluated": self.evaluated_children(),
            "generations": self.config.evolution.generations,
        })

    # ------------------------------------------------------------------ best

    def best_row(self) -> CandidateRow | None:
        return self.store.best_candidate(self.maximize)

    def best_score(self) -> float | None:
        if self._best_fitness is None:
            return None
        return self._best_fitness if self.maximize else -self._best_fitness

    def _write_best(self, candidate_id: int) -> None:
        from cambrian.run_files import write_best

        write_best(self.run_dir, self.store, candidate_id, self.task.program_filename)

    # ------------------------------------------------------------------ main loop

    async def run(self) -> RunSummary:
        self.store.add_event("session_start", {"pid": __import__("os").getpid()})
        self._restore()
        prepare = getattr(self.evaluator, "prepare", None)
        if prepare is not None:  # e.g. generate a judged task's test cases, failing fast
            await prepare()
        from cambrian.search.prelude import prepare_run  # it imports this module

        await prepare_run(self)  # the problem brief; a first program when the task has none
        for row in self.store.candidates("pending"):
            if row.id == 1:
                await self._evaluate(row)
        if self.novelty is not None:  # every island's index starts with the initial program
            await self.novelty.index_initial(self.store.candidate(1))
        queue: list[CandidateRow] = self.store.candidates("pending")
        proposals: set[asyncio.Task[int | None]] = set()
        evaluations: set[asyncio.Task[None]] = set()
        side: set[asyncio.Task[Any]] = set()  # meta-scratchpad updates
        next_generation = self.store.max_generation() + 1
        try:
            while True:
                side.update(self.side_work.launch_due(self.evaluated_children()))
                while self._may_launch():
                    self._proposals_in_flight += 1
                    proposals.add(asyncio.create_task(self._proposal_slot(next_generation)))
                    next_generation += 1
                while queue and len(evaluations) < self.config.evolution.max_parallel_evaluations:
                    evaluations.add(asyncio.create_task(self._evaluate(queue.pop(0))))
                if not proposals and not evaluations and not side:
                    break
                done, _ = await asyncio.wait(proposals | evaluations | side,
                                             return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    proposals.discard(task)  # type: ignore[arg-type]
                    evaluations.discard(task)  # type: ignore[arg-type]
                    side.discard(task)
                    result = task.result()  # re-raises failures of the loop itself
                    if isinstance(result, int):
                        queue.append(self.store.candidate(result))
        except BaseException as exc:
            for task in proposals | evaluations | side:
                task.cancel()
            await asyncio.gather(*proposals, *evaluations, *side, return_exceptions=True)
            self.store.add_event("session_end", {"reason": f"{type(exc).__name__}: {exc}"})
            raise
        for task in side:  # a scratchpad update still running is of no use to a finished run
            task.cancel()
        await asyncio.gather(*side, return_exceptions=True)
        reason = (
            "generation budget reached"
            if self.evaluated_children() >= self.config.evolution.generations
            else self.stop_reason(launching=1) or "no further proposal possible"
        )
        self.store.add_event("session_end", {"reason": reason})
        return self.summary(reason)

    def summary(self, reason: str) -> RunSummary:
        best = self.best_row()
        initial = self.store.candidate(1)
        return RunSummary(
            run_dir=self.run_dir,
            best_id=best.id if best else None,
            best_score=best.score if best else None,
            initial_score=initial.score,
            evaluations=self.evaluated_children(),
            llm_calls=self.store.llm_call_count(),
            stop_reason=reason,
            tune_trials=self.tuner.trials if self.tuner is not None else 0,
        )
