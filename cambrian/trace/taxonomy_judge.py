"""Label a run's edits with an LLM judge: batching, retries on malformed replies, the cache.

:func:`label_edits` labels a list of :class:`~cambrian.trace.edits.Edit`; :func:`label_run` does
it for a whole run and writes ``<run>/trace/taxonomy.json``, which ``cambrian report`` reads.
Identical diffs are judged once. A batch whose reply stays malformed after ``max_attempts``
(the judge is shown its own reply and the validation error each time) leaves its edits
unlabelled; they are retried on the next run since failures are never cached.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cambrian.llm.base import GenerationParams, LLMError, LLMProvider, LLMRequest, Message
from cambrian.trace.edits import Edit, collect_edits
from cambrian.trace.extras import TAXONOMY_FILE, extras_dir, write_json
from cambrian.trace.label_cache import CachedLabels, LabelCache
from cambrian.trace.loading import load_trace
from cambrian.trace.model import Trace
from cambrian.trace.taxonomy import (
    JudgeReplyError,
    parse_reply,
    reply_grammar,
    rubric_for,
    system_prompt_for,
    user_prompt,
)
from cambrian.trace.taxonomy_stats import helpfulness, prevalence

TOKENS_PER_EDIT = 160


@dataclass(frozen=True)
class JudgeSettings:
    batch_size: int = 4  # diffs per request
    max_batch_chars: int = 16_000  # a batch closes early once its diffs reach this size
    max_attempts: int = 3  # per batch: the first reply plus corrections of malformed ones
    temperature: float = 0.0
    max_tokens: int | None = None  # reply budget; TOKENS_PER_EDIT per diff when None
    use_grammar: bool = False  # constrain the reply with a GBNF grammar (local llama.cpp judge)
    concurrency: int = 1  # batches in flight

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.max_attempts < 1 or self.concurrency < 1:
            raise ValueError("batch_size, max_attempts and concurrency must be at least 1")


@dataclass
class Labelling:
    judge: str
    rubric: str
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)  # edit (child id) -> labels
    rationales: dict[str, str] = field(default_factory=dict)
    unlabelled: dict[str, str] = field(default_factory=dict)  # edit -> why
    cache_hits: int = 0  # edits answered from the cache
    calls: int = 0
    malformed_replies: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class _BatchFailed(Exception):
    pass


class _Judge:
    def __init__(self, provider: LLMProvider, settings: JudgeSettings, tally: Labelling,
                 system_prompt: str) -> None:
        self.provider = provider
        self.settings = settings
        self.tally = tally
        self.system_prompt = system_prompt  # a program's rubric, or a text artifact's

    async def judge(self, diffs: list[tuple[str, str]]) -> list[CachedLabels]:
        settings = self.settings
        messages: tuple[Message, ...] = (Message("system", self.system_prompt),
                                         Message("user", user_prompt(diffs)))
        params = GenerationParams(
            temperature=settings.temperature,
            max_tokens=settings.max_tokens or 64 + TOKENS_PER_EDIT * len(diffs),
            grammar=reply_grammar(len(diffs)) if settings.use_grammar else None,
        )
        error = ""
        for _ in range(settings.max_attempts):
            try:
                response = await self.provider.complete(LLMRequest(messages, params))
            except LLMError as exc:
                raise _BatchFailed(f"judge call failed: {type(exc).__name__}: {exc}") from None
            self.tally.calls += 1
            self.tally.prompt_tokens += response.usage.prompt_tokens
            self.tally.completion_tokens += response.usage.completion_tokens
            self.tally.cost_usd += response.cost_usd
            try:
                return parse_reply(response.text, len(diffs))
            except JudgeReplyError as exc:
                self.tally.malformed_replies += 1
                error = str(exc)
                if response.truncated:
                    error = f"the reply hit the token limit; {error}"
                messages = messages + (
                    Message("assistant", response.text),
                    Message("user", f"That reply could not be used: {error}. Send the corrected "
                                    "JSON object only, covering every edit."),
                )
        raise _BatchFailed(f"no valid reply after {settings.max_attempts} attempts: {error}")


def _batches(items: list[tuple[str, str]], settings: JudgeSettings) -> list[list[tuple[str, str]]]:
    """Consecutive (digest, diff) groups of at most batch_size diffs and ~max_batch_chars."""
    batches: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    size = 0
    for digest, diff in items:
        if current and (len(current) >= settings.batch_size
                        or size + len(diff) > settings.max_batch_chars):
            batches.append(current)
            current, size = [], 0
        current.append((digest, diff))
        size += len(diff)
    if current:
        batches.append(current)
    return batches


async def label_edits(edits: Sequence[Edit], language: str, provider: LLMProvider, judge: str,
                      cache: LabelCache, settings: JudgeSettings = JudgeSettings(), *,
                      rubric: str | None = None) -> Labelling:
    """Labels for ``edits`` from the cache or, for the rest, from ``provider`` (``rubric``:
    by default the language's, ``taxonomy.rubric_for``: a text artifact's edits are judged
    with the labels read for a text)."""
    rubric = rubric or rubric_for(language)
    result = Labelling(judge=judge, rubric=rubric)
    digests = {edit.child_id: edit.diff_sha256 for edit in edits}
    known: dict[str, CachedLabels] = cache.get_many(judge, rubric, list(digests.values()))
    result.cache_hits = sum(1 for digest in digests.values() if digest in known)
    pending: dict[str, str] = {}
    for edit in edits:
        if edit.diff_sha256 not in known:
            pending.setdefault(edit.diff_sha256, edit.diff)
    failures: dict[str, str] = {}
    worker = _Judge(provider, settings, result, system_prompt_for(language))
    gate = asyncio.Semaphore(settings.concurrency)

    async def run(batch: list[tuple[str, str]]) -> None:
        async with gate:
            try:
                verdicts = await worker.judge([(language, diff) for _, diff in batch])
            except _BatchFailed as exc:
                failures.update({digest: str(exc) for digest, _ in batch})
                return
        answered = {digest: verdict for (digest, _), verdict in zip(batch, verdicts, strict=True)}
        cache.put_many(judge, rubric, answered)  # saved per batch: an interrupted run keeps them
        known.update(answered)

    await asyncio.gather(*(run(b) for b in _batches(list(pending.items()), settings)))
    for edit in edits:
        digest = digests[edit.child_id]
        if digest in known:
            result.labels[edit.child_id], result.rationales[edit.child_id] = known[digest]
        else:
            result.unlabelled[edit.child_id] = failures.get(digest, "not judged")
    return result


def taxonomy_document(labelling: Labelling, edits: Sequence[Edit]) -> dict[str, Any]:
    """What ``taxonomy.json`` holds: per-edit labels plus prevalence and helpfulness (§5.1)."""
    improved = {edit.child_id: edit.improved for edit in edits}
    return {
        "judge": labelling.judge,
        "rubric": labelling.rubric,
        "edits": len(edits),
        "labels": {k: list(v) for k, v in labelling.labels.items()},
        "rationales": labelling.rationales,
        "unlabelled": labelling.unlabelled,
        "improved": improved,
        "prevalence": prevalence(labelling.labels),
        "helpfulness": [h.to_dict() for h in helpfulness(labelling.labels, improved)],
        "usage": {"calls": labelling.calls, "cache_hits": labelling.cache_hits,
                  "malformed_replies": labelling.malformed_replies,
                  "prompt_tokens": labelling.prompt_tokens,
                  "completion_tokens": labelling.completion_tokens,
                  "cost_usd": labelling.cost_usd},
    }


def taxonomy_path(trace: Trace) -> Path:
    if trace.origin is None:
        raise ValueError("the trace was not read from disk; there is no run folder to write to")
    return extras_dir(trace.origin) / TAXONOMY_FILE


async def label_run(location: str | Path, provider: LLMProvider, judge: str,
                    settings: JudgeSettings = JudgeSettings(), *,
                    edit_ids: Sequence[str] | None = None) -> tuple[Labelling, Path]:
    """Label every edit of a run (or only ``edit_ids``, by child id) and write taxonomy.json."""
    trace = load_trace(location)
    edits = collect_edits(trace)
    if edit_ids is not None:
        wanted = {str(e) for e in edit_ids}
        edits = [edit for edit in edits if edit.child_id in wanted]
    with LabelCache.for_location(trace.origin or Path(location)) as cache:
        labelling = await label_edits(edits, trace.run.language or "code", provider, judge, cache,
                                      settings)
    target = write_json(taxonomy_path(trace), taxonomy_document(labelling, edits))
    return labelling, target


def cached_labels(location: str | Path, judge: str, *,
                  rubric: str | None = None) -> dict[str, tuple[str, ...]]:
    """The labels ``judge`` gave this run's edits earlier (edits it never judged are absent)."""
    trace = load_trace(location)
    rubric = rubric or rubric_for(trace.run.language)
    edits = collect_edits(trace)
    with LabelCache.for_location(trace.origin or Path(location)) as cache:
        known = cache.get_many(judge, rubric, [e.diff_sha256 for e in edits])
    return {e.child_id: known[e.diff_sha256][0] for e in edits if e.diff_sha256 in known}
