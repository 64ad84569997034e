"""Checks before the first LLM call, so a run that cannot work says why at once instead of
spending calls first: every remote model's server answers, the initial program parses, its
EVOLVE-BLOCK markers are there (or their absence is announced), and it evaluates correctly (a
failing initial program stops the run with its error, unless ``evolution.repair_initial`` asks
the LLM to fix it, or the task has no initial program and the LLM writes one)."""

from __future__ import annotations

import asyncio
import logging
import sys

from cambrian.core.events import ContainmentChecked, PreflightNote
from cambrian.core.hooks import LoopHook
from cambrian.core.outcomes import RunOutcome
from cambrian.core.status import CandidateStatus
from cambrian.evaluate.containment import containment_report, missing_mechanisms
from cambrian.evaluate.devices import relaxed_for_devices
from cambrian.evaluate.missing_module import missing_module, missing_module_advice
from cambrian.mutate.file_checks import syntax_error_files
from cambrian.search.context import RunAborted, RunContext
from cambrian.search.evaluations import EvaluationQueue
from cambrian.task.blocks import BlockError, parse_regions

log = logging.getLogger(__name__)


class Preflight(LoopHook):
    name = "preflight"

    def __init__(self, ctx: RunContext, queue: EvaluationQueue) -> None:
        self.ctx = ctx
        self.queue = queue

    async def prepare(self) -> None:
        await self._check_models()
        probe = asyncio.create_task(self._check_containment())  # beside the initial program
        try:
            await self._check_initial()
        finally:
            await probe

    async def _check_initial(self) -> None:
        initial = self.ctx.store.candidates.find(1)
        if initial is not None and initial.status is not CandidateStatus.PENDING:
            return  # evaluated in an earlier session
        for note in self.ctx.task.notes:  # e.g. a peer's config file, translated
            log.warning(note)
            self.ctx.recorder.emit(PreflightNote(message=note))
        if initial is None:
            return  # the LLM writes the first program
        self._check_source(initial.source or "")
        await self.queue.evaluate(initial)
        evaluated = self.ctx.store.candidates.get(1)
        result = self.ctx.store.evaluations.latest(1)
        module = missing_module(result) if result is not None else None
        if module is not None:  # no LLM call can install a package: stop, even to repair
            python = self.ctx.config.evaluation.python or sys.executable
            raise RunAborted(missing_module_advice(module, python), RunOutcome.NOTHING_EVALUATED,
                             before_start=True)
        if evaluated.status is CandidateStatus.CORRECT or self.ctx.config.evolution.repair_initial:
            return
        detail = (result.error or result.stderr[-1500:] or result.status) if result else ""
        raise RunAborted(
            f"the initial program does not pass the task's evaluation ({evaluated.status}): "
            f"{detail.strip()[:1500]}. Fix it (or set evolution.repair_initial: true to have the "
            "LLM repair it)", RunOutcome.NOTHING_EVALUATED, before_start=True)

    async def _check_models(self) -> None:
        gateway = self.ctx.gateway
        for label in gateway.models:
            problem = await gateway.unreachable(label)
            if problem is not None:
                raise RunAborted(f"model '{label}': {problem}; start the server or fix "
                                 "llm.models[].base_url", RunOutcome.LLM_UNREACHABLE,
                                 before_start=True)

    async def _check_containment(self) -> None:
        """Record what the sandbox lacks on this machine (each session: a resumed run may be
        on another machine); a missing mechanism is a warning, never a failure."""
        report = await asyncio.to_thread(containment_report)
        missing = missing_mechanisms(report, self.ctx.config.evaluation.isolate_network)
        evaluation = self.ctx.config.evaluation
        gpus = list(getattr(getattr(self.queue.executor.evaluator, "devices", None), "gpus", ()))
        if evaluation.devices.gpu and self.ctx.config.execution.backend == "ray":
            gpus = [f"{evaluation.devices.gpu} per evaluation, as Ray assigns them"]
        relaxed = (relaxed_for_devices(evaluation.memory_limit_mb, evaluation.devices.share)
                   if gpus else [])
        self.ctx.recorder.emit(ContainmentChecked(missing=missing,
                                                  warnings=str(report.get("warnings", "")),
                                                  relaxed=relaxed, gpus=gpus))
        if missing:
            log.warning("the sandbox lacks %s on this machine (python -m "
                        "cambrian.evaluate.containment says why)", ", ".join(missing))
        for relaxation in relaxed:
            log.info("sandbox relaxed: %s", relaxation)

    def _check_source(self, source: str) -> None:
        language = self.ctx.task.language
        error = syntax_error_files("", source, language)  # each file, beside the others
        if error is not None:
            raise RunAborted(f"the initial program does not parse as {language.name}: {error}",
                             RunOutcome.NOTHING_EVALUATED,
                             before_start=True)
        try:
            regions = parse_regions(source)
        except BlockError as exc:
            raise RunAborted(f"the initial program's EVOLVE-BLOCK markers are malformed: {exc}",
                             RunOutcome.NOTHING_EVALUATED,
                             before_start=True) from None
        if not regions.has_markers:
            note = ("the initial program has no EVOLVE-BLOCK-START/END markers: the whole file "
                    "may change; add the markers around the part that should evolve")
            log.warning(note)
            self.ctx.recorder.emit(PreflightNote(message=note))
