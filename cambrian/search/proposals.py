"""One generation's proposal slot: a hook may fill it without the LLM (a tune step, a merge);
otherwise the request builder draws a parent and the bandit an arm, the generator runs one
conversation, and a slot that produced nothing usable resamples a few times."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from cambrian.core.events import ProposalEnded, ProposalFailed, ProposalStarted
from cambrian.core.hooks import LoopHook, SlotContext
from cambrian.core.outcomes import ProposalOutcome, RunOutcome
from cambrian.llm.ensemble import Arm, Ensemble
from cambrian.mutate.proposer import Generator
from cambrian.search.archive import Archive
from cambrian.search.context import Progress, RunAborted, RunContext
from cambrian.search.requests import RequestBuilder


class ProposalSlots:
    def __init__(self, ctx: RunContext, archive: Archive, hooks: list[LoopHook],
                 requests: RequestBuilder, proposer: Generator, ensemble: Ensemble,
                 filter_allowances: dict[str, int], progress: Progress,
                 stop_reason: Callable[[], str | None],
                 search_state: Callable[[], dict[str, object]]) -> None:
        self.ctx = ctx
        self.archive = archive
        self.hooks = hooks
        self.requests = requests
        self.proposer = proposer
        self.ensemble = ensemble
        self.filter_allowances = filter_allowances
        self.progress = progress
        self.stop_reason = stop_reason
        self.search_state = search_state
        self._numbers = itertools.count(1)  # the session's proposals, for ProposalStarted

    def allowance(self) -> int:
        """Evaluations of the budget not yet committed to: this slot is in flight already, so
        what is left beyond it may go to a hook's own evaluations (tune trials)."""
        ctx = self.ctx
        return (ctx.config.evolution.generations - self.progress.evaluations_spent()
                - self.progress.pending - ctx.counters.proposals_in_flight)

    def choose_arm(self, models: frozenset[str] = frozenset()) -> Arm:
        """The bandit's arm among those of ``models`` (a search phase's; empty: any), the
        cheaper ones while spending is ahead of the run's progress."""
        allowed = ({a.key for a in self.ensemble.arms if a.model.label in models} or None
                   if models else None)
        if self.ctx.budget.behind_schedule(self.progress.evaluations_spent()):
            cheaper = self.ctx.budget.cheaper_arms({a.key: a.model.label
                                                    for a in self.ensemble.arms})
            if cheaper is not None:
                allowed = (allowed & cheaper or allowed) if allowed is not None else cheaper
        return self.ensemble.choose(self.requests.rng, allowed)

    async def run(self, generation: int) -> int | None:
        """One slot; the caller counted it in ``proposals_in_flight``. The pending child's id,
        or None when the slot produced none."""
        ctx = self.ctx
        try:
            slot = SlotContext(generation, self.allowance(), self.progress.children_evaluated(),
                               self.archive.selector.programs, self.requests.rng)
            for hook in self.hooks:
                taken = await hook.take_slot(slot)
                if taken is not None:
                    return taken.child_id
            return await self._llm_proposals(generation)
        finally:
            ctx.counters.proposals_in_flight -= 1

    async def _llm_proposals(self, generation: int) -> int | None:
        ctx = self.ctx
        resamples, refusals = 0, Counter[str]()
        while resamples < ctx.config.evolution.max_patch_resamples:
            request = self.requests.next(generation)
            relaxed = frozenset(name for name, count in refusals.items()
                                if count >= self.filter_allowances.get(name, 0))
            request = replace(request, relaxed_filters=relaxed)
            arm = self.choose_arm(request.models)
            number = next(self._numbers)
            ctx.recorder.emit(ProposalStarted(
                proposal=number, parent_id=request.parent.id,
                intent=str(request.tags.get("intent") or request.kind), model=arm.key))
            result = await self.proposer.propose(request, arm)
            ctx.recorder.emit(ProposalEnded(proposal=number, outcome=str(result.outcome),
                                            candidate_id=result.candidate_id))
            ctx.counters.note_errors(result.errors)
            if result.outcome is ProposalOutcome.FATAL:
                raise RunAborted(f"model '{arm.model.label}': {result.errors[-1]}",
                                 RunOutcome.LLM_UNREACHABLE)
            if result.outcome is ProposalOutcome.BUDGET:
                return None
            if result.outcome is ProposalOutcome.CHILD:
                self.archive.on_child(request.parent.id)
                return result.candidate_id
            self.ensemble.observe(arm.key, 0.0)  # a pull that produced nothing new
            with ctx.recorder.transaction():
                ctx.recorder.save_state({"ensemble": self.ensemble.state()})
                ctx.recorder.emit(ProposalFailed(errors=result.errors, model=arm.key,
                                                 outcome=str(result.outcome)))
            if result.refused_by is not None:
                refusals[result.refused_by] += 1  # each filter has its own allowance
            else:
                resamples += 1
            if self.stop_reason() is not None:
                break
        ctx.counters.failed_slots += 1
        return None
