"""Replay stability (seed 001 §5.3): send a stored LLM context again, N times, to the same or
another model, turn each reply into a program exactly as the original proposal did, evaluate it
with the task's evaluator, and report the (parse success, evaluation success, exact match,
score ratio) picture.

The reply format is the one recorded with the original child; for older records it is
inferred as the format that turns the original reply into the original child. Python full
rewrites get the same repair the proposer applies (definitions the fixed code needs are carried
over). A replayed program that repeats an earlier trial's source is evaluated once.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cambrian.config import build_config
from cambrian.core.status import CandidateStatus
from cambrian.lang.syntax import check_syntax
from cambrian.llm.base import GenerationParams, LLMError, LLMProvider, LLMRequest, Message
from cambrian.mutate.formats.registry import REPLY_FORMATS
from cambrian.mutate.patches import PatchError, apply_reply
from cambrian.mutate.reply_text import stopped_reply_text
from cambrian.mutate.required_names import restore_all
from cambrian.task.blocks import BlockError
from cambrian.trace.extras import extras_dir, write_json
from cambrian.trace.llm_choice import provider_for
from cambrian.trace.loading import load_trace
from cambrian.trace.model import CandidateRecord, ContextRecord, Trace, sha256_text

Evaluate = Callable[[str], Awaitable["float | None"]]


@dataclass(frozen=True)
class ReplayTrial:
    index: int
    parsed: bool  # the reply applied to the parent and the program compiles
    evaluated: bool  # the evaluator accepted the program
    exact_match: bool  # byte-identical to the original child
    score: float | None
    score_ratio: float | None  # score / original score
    error: str = ""
    reply_sha256: str | None = None


@dataclass
class ReplayReport:
    context_id: str
    candidate_id: str
    parent_id: str
    original_model: str
    replay_model: str
    reply_format: str
    original_score: float | None
    trials: list[ReplayTrial] = field(default_factory=list)

    def _rate(self, attribute: str) -> float | None:
        if not self.trials:
            return None
        return sum(bool(getattr(t, attribute)) for t in self.trials) / len(self.trials)

    def summary(self) -> dict[str, Any]:
        ratios = [t.score_ratio for t in self.trials if t.score_ratio is not None]
        return {
            "n": len(self.trials),
            "parse_success": self._rate("parsed"),
            "evaluation_success": self._rate("evaluated"),
            "exact_match": self._rate("exact_match"),
            "median_score_ratio": statistics.median(ratios) if ratios else None,
            "mean_score_ratio": statistics.fmean(ratios) if ratios else None,
        }

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["summary"] = self.summary()
        return data


def _reply_program(fmt: str, parent_source: str, reply: str, language: str) -> str:
    """The child ``reply`` makes of the parent, as the proposer builds it (raises PatchError,
    BlockError or ValueError when it does not apply)."""
    source = apply_reply(fmt, parent_source, reply, language).source
    if fmt == "full" and language == "python":
        source, _ = restore_all(parent_source, source)
    return source


def infer_format(candidate: CandidateRecord, parent_source: str, reply: str | None,
                 language: str) -> str:
    recorded = candidate.notes.get("format")
    if isinstance(recorded, str) and recorded in REPLY_FORMATS:
        return str(recorded)
    applicable = []
    for fmt in ("diff", "function", "full"):
        try:
            source = _reply_program(fmt, parent_source, reply or "", language)
        except (PatchError, BlockError, ValueError):
            continue
        if source == candidate.source:
            return fmt
        applicable.append(fmt)
    if applicable:
        return applicable[0]
    return "full" if candidate.operator in ("full", "cross", "fix") else "diff"


def _request(context: ContextRecord) -> LLMRequest:
    params = dict(context.params)
    known = {name: params[name] for name in GenerationParams.__dataclass_fields__ if name in params}
    known["stop"] = tuple(known.get("stop") or ())
    known["seed"] = None  # a fixed seed would make every replay identical on a local model
    messages = tuple(Message(m["role"], m["content"])  # type: ignore[arg-type]
                     for m in context.messages)
    return LLMRequest(messages, GenerationParams(**known))


def target_of(trace: Trace, *, context_id: str | None = None,
              candidate_id: str | None = None) -> tuple[ContextRecord, CandidateRecord]:
    """The context to replay and the candidate it produced (identified by either)."""
    contexts = {c.id: c for c in trace.contexts}
    if candidate_id is not None:
        if not trace.has(candidate_id):
            raise ValueError(f"no candidate {candidate_id} in this run")
        candidate = trace.candidate(candidate_id)
        if candidate.context_id is None or candidate.context_id not in contexts:
            raise ValueError(f"candidate {candidate_id} has no recorded LLM context")
        return contexts[candidate.context_id], candidate
    if context_id is None or str(context_id) not in contexts:
        raise ValueError(f"no context {context_id} in this run")
    produced = [c for c in trace.candidates if c.context_id == str(context_id)]
    if not produced:
        raise ValueError(f"context {context_id} produced no candidate (not a mutation call?)")
    return contexts[str(context_id)], produced[0]


async def replay_context(trace: Trace, provider: LLMProvider, evaluate: Evaluate, *,
                         context_id: str | None = None, candidate_id: str | None = None,
                         n: int = 5, concurrency: int = 2) -> ReplayReport:
    context, child = target_of(trace, context_id=context_id, candidate_id=candidate_id)
    parent_id = trace.parent_of(child.id)
    parent_source = trace.source_of(parent_id) if parent_id is not None else None
    if parent_id is None or parent_source is None:
        raise ValueError(f"candidate {child.id} has no parent program to apply replies to")
    language = child.language or trace.run.language
    stored_reply = context.response_text
    if stored_reply is not None and context.finish_reason != "length":
        stored_reply = stopped_reply_text(stored_reply, tuple(context.params.get("stop") or ()))
    fmt = infer_format(child, parent_source, stored_reply, language)
    original_score = child.score if child.status is CandidateStatus.CORRECT else None
    report = ReplayReport(context_id=context.id, candidate_id=child.id, parent_id=parent_id,
                          original_model=context.model, replay_model=provider.model,
                          reply_format=fmt, original_score=original_score)
    request = _request(context)
    gate = asyncio.Semaphore(max(1, concurrency))
    scores: dict[str, asyncio.Task[float | None]] = {}

    async def trial(index: int) -> ReplayTrial:
        async with gate:
            try:
                response = await provider.complete(request)
            except LLMError as exc:
                return ReplayTrial(index, False, False, False, None, None,
                                   error=f"{type(exc).__name__}: {exc}")
        digest = sha256_text(response.text)
        text = stopped_reply_text(response, request.params.stop)
        try:
            source = _reply_program(fmt, parent_source, text, language)
        except (PatchError, BlockError, ValueError) as exc:
            return ReplayTrial(index, False, False, False, None, None, str(exc), digest)
        problem = await asyncio.to_thread(check_syntax, source, language)
        if problem:
            return ReplayTrial(index, False, False, False, None, None,
                               f"syntax error: {problem}", digest)
        key = sha256_text(source)
        if key not in scores:
            scores[key] = asyncio.ensure_future(evaluate(source))
        score = await scores[key]
        ratio = (score / original_score if score is not None and original_score
                 else None)
        return ReplayTrial(index, True, score is not None, source == child.source, score, ratio,
                           "" if score is not None else "the evaluator rejected the program",
                           digest)

    report.trials = list(await asyncio.gather(*(trial(i) for i in range(n))))
    return report


def provider_of_run(run_dir: Path, model_label: str) -> LLMProvider:
    """The run's own provider for a model label, from the run's stored configuration."""
    from cambrian.store.store import Store

    store = Store.open(run_dir)
    try:
        config = build_config([store.runs.info().config])
    finally:
        store.close()
    for model in config.llm.models:
        if model.label == model_label:
            return provider_for(model)
    raise ValueError(f"the run's configuration has no model labelled {model_label!r}; "
                     "choose one with --model/--provider")


async def replay_run(run_dir: str | Path, *, context_id: str | None = None,
                     candidate_id: str | None = None, n: int = 5,
                     provider: LLMProvider | None = None,
                     concurrency: int = 2) -> tuple[ReplayReport, Path]:
    """Replay on a stored run with its own evaluator; writes ``trace/replay-<context>.json``."""
    from cambrian.trace.run_evaluation import RunEvaluator

    trace = load_trace(run_dir)
    context, _ = target_of(trace, context_id=context_id, candidate_id=candidate_id)
    chosen = provider or provider_of_run(Path(run_dir), context.model)
    with RunEvaluator(run_dir) as evaluator:
        report = await replay_context(trace, chosen, evaluator.score, context_id=context.id,
                                      n=n, concurrency=concurrency)
    path = extras_dir(trace.origin or Path(run_dir)) / f"replay-{context.id}.json"
    return report, write_json(path, report.to_dict())
