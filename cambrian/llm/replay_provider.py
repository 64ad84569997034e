"""Recorded replies served as a provider: the ``replay`` provider and what ``cambrian replay``
puts behind every model of a replayed run, so that the gateway (budget, ledger, reply cap) runs
as it did while no model is ever called.

A reply is found by its request: the messages and sampling parameters, byte for byte, of a call
the original run recorded (the grammar aside: a model without grammars is sent none). Identical
requests are served in the order they were recorded. A call whose attempts failed and were
retried is served as it happened: each retried attempt is told to the gateway (its ledger row)
before the final reply or error. A request the run never sent has no reply: with a
:class:`Turnstile` (``cambrian replay``) the turnstile decides (the replay diverged, or reached
the end of the trace); without one it fails as a bad request, the way a server refuses one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol

from cambrian.llm import base
from cambrian.llm.base import (
    FinishReason,
    LLMBadRequest,
    LLMError,
    LLMRequest,
    LLMResponse,
    Usage,
    estimate_tokens,
)
from cambrian.llm.retry import ATTEMPT_FAILED, FailedAttempt
from cambrian.store.rows import ContextRow
from cambrian.store.store import Store

# What the gateway appends to a retried attempt's error (``gateway.py``): "X: msg (attempt 1 of
# 4; retried)".
_RETRIED = re.compile(r"^(?P<kind>\w+): (?P<message>.*) \(attempt (?P<number>\d+) of "
                      r"(?P<of>\d+); retried\)$", re.DOTALL)
_FAILED = re.compile(r"^(?P<kind>\w+): (?P<message>.*)$", re.DOTALL)
_FINISH: tuple[FinishReason, ...] = ("stop", "length", "error", "other")


class ReplayMissing(LLMBadRequest):
    """A request the recorded run never sent (no reply to serve)."""


def request_key(messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> str:
    """The identity of a request: its messages and parameters (grammar aside), as the store
    writes them (JSON: tuples are lists)."""
    plain = {"messages": [{"role": m.get("role"), "content": m.get("content")} for m in messages],
             "params": {k: v for k, v in params.items() if k != "grammar"}}
    text = json.dumps(plain, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key_of(request: LLMRequest) -> str:
    return request_key([asdict(m) for m in request.messages],
                       json.loads(json.dumps(asdict(request.params), default=str)))


def recorded_error(text: str) -> LLMError:
    """The provider error a ledger row names (``"LLMTimeout: read timed out"``), rebuilt with its
    class so the gateway classifies it as it did; an unknown class name (a plugin's) keeps its
    name on a plain :class:`LLMError`."""
    match = _FAILED.match(text)
    kind, message = (match["kind"], match["message"]) if match else ("LLMError", text)
    cls = getattr(base, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, LLMError)):
        cls = type(kind, (LLMError,), {})
    return cls(message)


@dataclass(frozen=True)
class RecordedCall:
    """One call of the recorded run: the ledger rows of its retried attempts, then its last."""

    retried: tuple[ContextRow, ...]
    final: ContextRow

    @property
    def label(self) -> str:
        return self.final.model

    @property
    def sent_at(self) -> float:
        """When its first attempt was sent: a row is written when its reply came, after its
        latency."""
        return min(row.created_at - row.latency_s for row in (*self.retried, self.final))


@dataclass
class ReplyBook:
    """The recorded calls of a run by request, each served once, in recorded order."""

    calls: dict[str, list[RecordedCall]] = field(default_factory=dict)
    rows: dict[int, ContextRow] = field(default_factory=dict)  # by context id
    recorded: dict[int, RecordedCall] = field(default_factory=dict)  # by its last row's id
    served: int = 0

    @classmethod
    def from_contexts(cls, contexts: Sequence[ContextRow]) -> ReplyBook:
        book = cls()
        attempts: dict[tuple[str, str], list[ContextRow]] = {}
        for row in sorted(contexts, key=lambda r: r.id):
            book.rows[row.id] = row
            key = request_key(row.messages, row.params)
            if _RETRIED.match(row.error or ""):
                attempts.setdefault((row.model, key), []).append(row)
                continue
            call = RecordedCall(tuple(attempts.pop((row.model, key), ())), row)
            book.calls.setdefault(key, []).append(call)
            book.recorded[row.id] = call
        return book

    @classmethod
    def from_store(cls, store: Store) -> ReplyBook:
        return cls.from_contexts(store.contexts.list())

    def take(self, label: str | None, key: str) -> RecordedCall | None:
        """The first unserved call with this request made to model ``label`` (None: any)."""
        queue = self.calls.get(key, [])
        for index, call in enumerate(queue):
            if label is None or call.label == label:
                self.served += 1
                return queue.pop(index)
        return None

    def next_unserved(self, label: str | None) -> ContextRow | None:
        """The earliest recorded call not served yet (to ``label``): the one a request that
        found no reply most likely stands for."""
        waiting = [call.final for queue in self.calls.values() for call in queue
                   if label is None or call.label == label]
        return min(waiting, key=lambda row: row.id, default=None)

    def remaining(self) -> int:
        return sum(len(queue) for queue in self.calls.values())


def first_difference(recorded: Sequence[Mapping[str, Any]], request: LLMRequest) -> str:
    """Where a request's messages first differ from a recorded call's, in one line."""
    sent = [asdict(m) for m in request.messages]
    for index, (old, new) in enumerate(zip(recorded, sent)):
        if old.get("role") != new["role"]:
            return f"message {index + 1} is from {new['role']}, was from {old.get('role')}"
        old_lines = str(old.get("content", "")).splitlines()
        new_lines = new["content"].splitlines()
        for number, (was, now) in enumerate(zip(old_lines, new_lines), start=1):
            if was != now:
                return (f"message {index + 1} ({new['role']}), line {number}: {now[:120]!r} "
                        f"(was {was[:120]!r})")
        if len(old_lines) != len(new_lines):
            return (f"message {index + 1} ({new['role']}) has {len(new_lines)} lines "
                    f"(was {len(old_lines)})")
    if len(recorded) != len(sent):
        return f"{len(sent)} messages (was {len(recorded)})"
    return "the messages are the same; the sampling parameters differ"


class Turnstile(Protocol):
    """What orders a replay's calls as the recorded run made them (``search/replay_schedule``)."""

    async def turn(self, context_id: int) -> None:
        """Return once the recorded call ``context_id`` may be answered."""
        ...

    async def missing(self, label: str, message: str) -> NoReturn:
        """A request with no recorded reply: the replay stops here (never returns)."""
        ...


class ReplayProvider:
    """An :class:`~cambrian.llm.base.LLMProvider` that answers with a recorded run's replies and
    never calls a model. ``label`` None serves a call recorded for any model (the ``replay``
    provider of a configuration); the token counting is the recorded model's, so that prompts
    are cut to fit as they were."""

    def __init__(self, book: ReplyBook, label: str | None, *, model_name: str,
                 context_window: int | None,
                 count_tokens: Callable[[str], int] = estimate_tokens,
                 turnstile: Turnstile | None = None) -> None:
        self.book = book
        self.label = label
        self._model = model_name
        self._context_window = context_window
        self._count_tokens = count_tokens
        self.turnstile = turnstile
        self.served = 0  # calls answered from the trace

    @property
    def model(self) -> str:
        return self._model

    @property
    def context_window(self) -> int | None:
        return self._context_window

    def count_tokens(self, text: str) -> int:
        return self._count_tokens(text)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        call = self.book.take(self.label, key_of(request))
        if call is None:
            await self._missing(request)
        assert call is not None
        for row in call.retried:
            if self.turnstile is not None:
                await self.turnstile.turn(row.id)
            self._tell_retried(row)
        if self.turnstile is not None:
            await self.turnstile.turn(call.final.id)
        self.served += 1
        final = call.final
        if final.error or final.response_text is None:
            raise recorded_error(final.error or "LLMError: no reply was recorded")
        # A reply the gateway cut is served at its recorded length again, so that the cut and
        # the characters it dropped are recorded as they were.
        text = final.response_text + " " * final.response_dropped_chars
        finish = final.finish_reason if final.finish_reason in _FINISH else "other"
        return LLMResponse(
            text=text, model=self._model, finish_reason=finish,  # type: ignore[arg-type]
            usage=Usage(final.prompt_tokens, final.completion_tokens, final.cached_tokens),
            latency_s=final.latency_s, cost_usd=final.cost_usd)

    async def _missing(self, request: LLMRequest) -> NoReturn:
        who = f"model '{self.label}'" if self.label is not None else "the replay model"
        nearest = self.book.next_unserved(self.label)
        where = (f"; next recorded call {nearest.id} ({nearest.purpose}): "
                 f"{first_difference(nearest.messages, request)}" if nearest is not None
                 else "; every recorded call was served")
        message = f"{who} was sent a request the recorded run never sent{where}"
        if self.turnstile is not None:
            await self.turnstile.missing(self.label or "", message)
        raise ReplayMissing(message)

    @staticmethod
    def _tell_retried(row: ContextRow) -> None:
        listener = ATTEMPT_FAILED.get()
        match = _RETRIED.match(row.error or "")
        if listener is None or match is None:
            return
        error = recorded_error(f"{match['kind']}: {match['message']}")
        listener(FailedAttempt(error=error, number=int(match["number"]), of=int(match["of"]),
                               latency_s=row.latency_s))


def replay_provider_from_run(run: str | Path, *, model_name: str,
                             context_window: int | None,
                             shared: dict[str, Any]) -> ReplayProvider:
    """The ``replay`` provider of a configuration: ``model`` names a run folder (or its
    ``run.sqlite``) whose replies it serves to the requests that run sent; one book per run
    folder is shared by the models naming it."""
    path = Path(run).expanduser()
    cache = f"replay|{path.resolve()}"
    if cache not in shared:
        try:
            store = Store.open(path, read_only=True)
        except FileNotFoundError as exc:
            raise LLMBadRequest(f"provider replay: {exc}; 'model' names the run folder whose "
                                "replies it serves") from None
        try:
            shared[cache] = ReplyBook.from_store(store)
        finally:
            store.close()
    return ReplayProvider(shared[cache], None, model_name=model_name,
                          context_window=context_window)
