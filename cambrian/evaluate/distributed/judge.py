"""A judge whose compilations and test cases run on Ray workers, everything else on the driver.

``DistributedJudge`` is the task's own ``JudgedEvaluator`` with two methods sent out:
``compile`` (one worker compiles, so a compile error comes back as the local judge would report
it) and ``run_cases`` (the cases split into contiguous chunks, one Ray job each, spread over the
nodes; each node compiles the program at most once, in its own cache). The stages of a tiered
evaluation, the remote scorer and the aggregation of per-case verdicts into one result are the
local judge's code, unchanged, so a candidate gets the same result fields either way.

With ``require_all_accepted``, the first chunk that reports a failed case cancels the chunks
still running; their cases count as skipped, like the cases a local judge does not start after
a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter, OrderedDict
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Protocol

from cambrian.config.judge import CaseRef
from cambrian.evaluate.distributed.worker import ChunkResult
from cambrian.evaluate.judge.evaluator import CaseBatch, JudgedEvaluator
from cambrian.evaluate.judge.toolchains import CompileResult

MAX_REMEMBERED_SOURCES = 256
_workers: ContextVar[set[str] | None] = ContextVar("cambrian_ray_workers", default=None)


class CaseDispatch(Protocol):
    """What the executor lends the judge: jobs on the cluster."""

    def chunk_count(self, cases: int) -> int: ...

    async def compile(self, source: str) -> tuple[CompileResult, str]: ...

    async def run_chunk(self, source: str, case_ids: Sequence[str],
                        keep_outputs: bool) -> ChunkResult: ...


@contextlib.contextmanager
def workers_seen() -> Iterator[set[str]]:
    """The workers the judge's jobs ran on while the block runs (this task and its children)."""
    seen: set[str] = set()
    token = _workers.set(seen)
    try:
        yield seen
    finally:
        _workers.reset(token)


def _saw(worker: str) -> None:
    seen = _workers.get()
    if seen is not None:
        seen.add(worker)


def split(cases: Sequence[CaseRef], count: int) -> list[list[CaseRef]]:
    """``count`` contiguous chunks of near-equal size, in case order."""
    size, extra = divmod(len(cases), count)
    chunks, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        chunks.append(list(cases[start:end]))
        start = end
    return [chunk for chunk in chunks if chunk]


class DistributedJudge(JudgedEvaluator):
    def __init__(self, local: JudgedEvaluator, dispatch: CaseDispatch) -> None:
        super().__init__(local.task, compile_cache=local.compile_cache,
                         case_store=local.case_store, python=local.scorer.python,
                         toolchain=local.toolchain)
        self.dispatch = dispatch
        self.compilations: Counter[str] = Counter()  # compiler runs per worker
        self._sources: OrderedDict[str, str] = OrderedDict()  # compile key -> source

    async def compile(self, source: str) -> CompileResult:
        compiled, worker = await self.dispatch.compile(source)
        _saw(worker)
        if not compiled.cache_hit:
            self.compilations[worker] += 1
        self._sources[compiled.key] = source
        self._sources.move_to_end(compiled.key)
        while len(self._sources) > MAX_REMEMBERED_SOURCES:
            self._sources.popitem(last=False)
        return compiled

    async def run_cases(self, compiled: CompileResult, cases: Sequence[CaseRef],
                        work_dir: Path, *, keep_outputs: bool = False) -> CaseBatch:
        assert compiled.ok, "run_cases needs a successful compilation"
        source = self._sources.get(compiled.key)
        if source is None:
            raise RuntimeError("run_cases on a program this judge did not compile")
        if not cases:
            return CaseBatch(results=[])
        chunks = split(cases, min(len(cases), self.dispatch.chunk_count(len(cases))))
        jobs = [asyncio.create_task(self.dispatch.run_chunk(
            source, [case.case_id for case in chunk], keep_outputs)) for chunk in chunks]
        done = await self._gather(jobs)
        batch = CaseBatch(results=[])
        for chunk, result in zip(chunks, done):
            if result is None:  # cancelled after another chunk failed
                batch.skipped += len(chunk)
                continue
            _saw(result.worker)
            if result.compiled_here:
                self.compilations[result.worker] += 1
            batch.results.extend(result.batch.results)
            batch.skipped += result.batch.skipped
            batch.outputs.update(result.batch.outputs)
        return batch

    async def _gather(self, jobs: list[asyncio.Task[ChunkResult]]) -> list[ChunkResult | None]:
        stop_on_failure = self.config.require_all_accepted
        pending = set(jobs)
        try:
            while pending:
                finished, pending = await asyncio.wait(pending,
                                                       return_when=asyncio.FIRST_COMPLETED)
                failed = any(_failed(job.result().batch) for job in finished)
                if stop_on_failure and failed:
                    break
        finally:
            for job in pending:
                job.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        return [job.result() if job.done() and not job.cancelled() else None for job in jobs]


def _failed(batch: CaseBatch) -> bool:
    return bool(batch.skipped) or any(not case.accepted for case in batch.results)


def distributed(evaluator: Any, dispatch: CaseDispatch) -> Any:
    """The driver's form of a judged task's evaluator (tiered stages kept, judge sent out)."""
    from cambrian.evaluate.judge.tiers import TieredEvaluator

    if isinstance(evaluator, TieredEvaluator):
        return TieredEvaluator(DistributedJudge(evaluator.judge, dispatch),
                               evaluator.best_reference, tiers=evaluator.tiers,
                               remote=evaluator.remote)
    return DistributedJudge(evaluator, dispatch)
