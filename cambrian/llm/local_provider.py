"""The default, offline LLM: a GGUF model run in-process by llama.cpp (``llama-cpp-python``).

One :class:`LocalLlamaProvider` owns one model instance, and a llama.cpp context can only serve
one request at a time, so calls are queued behind a lock and run in a worker thread to keep the
event loop free. llama-cpp-python keeps the KV cache of the previous call and re-evaluates only
the part of a new prompt after the longest common token prefix; Cambrian puts the fixed part of
its prompts first to profit from that, and :attr:`Usage.cached_prompt_tokens` reports the reuse.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import random
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cambrian.core.extras import require_extra
from cambrian.llm import model_files
from cambrian.llm.base import (
    ContextOverflow,
    FinishReason,
    LLMBadRequest,
    LLMError,
    LLMRequest,
    LLMResponse,
    Message,
    Usage,
)
from cambrian.llm.lazy_grammar import LazyGrammar
from cambrian.llm.prompt_states import PromptStates

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from llama_cpp.llama_grammar import LlamaGrammar

# llama.cpp's own default nucleus threshold, used when a request leaves top_p unset.
_DEFAULT_TOP_P = 0.95

# Used only if a GGUF carries no chat template of its own.
_CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class _PreparedPrompt:
    tokens: list[int]
    cached_tokens: int


class LocalLlamaProvider:
    """An :class:`~cambrian.llm.base.LLMProvider` backed by a local GGUF file."""

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_batch: int = 512,
        seed: int = 0,
        model_name: str | None = None,
        lazy_grammar: bool = True,
        saved_prompts: int = 4,
    ) -> None:
        """``lazy_grammar``: check a reply grammar only against the drawn token (see
        :mod:`cambrian.llm.lazy_grammar`); False runs llama-cpp-python's own full-vocabulary
        grammar sampler, several times slower with a large vocabulary."""
        self._lazy_grammar = lazy_grammar
        # KV states of recent prompts (see cambrian.llm.prompt_states); 0 turns it off.
        self._prompt_states = PromptStates(saved_prompts)
        self._model_path = Path(model_path)
        self._model_name = model_name or self._model_path.stem
        self._n_ctx = n_ctx
        self._n_threads = n_threads or _available_cores()
        self._n_batch = n_batch
        self._seed = seed
        # Per-call seeds come from this sequence, so a run is reproducible from ``seed`` while
        # repeated identical prompts still get different samples.
        self._seed_sequence = random.Random(seed)
        self._llm: Llama | None = None
        self._formatter: Jinja2ChatFormatter | None = None
        self._load_lock = threading.Lock()
        # Guards the model across threads and event loops; the asyncio locks below only keep
        # queued coroutines from each holding a worker thread while they wait.
        self._model_lock = threading.Lock()
        self._loop_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self._grammars: dict[str, LlamaGrammar] = {}
        self.last_completion_tokens = 0  # of the newest generation, cancelled ones included
        self.last_grammar_stats = (0, 0)  # (steps, steps that needed the full grammar mask)

    @classmethod
    def from_registry(cls, name: str, **kwargs: Any) -> LocalLlamaProvider:
        """Build a provider for a registered local model, assembling its GGUF if needed."""
        spec = model_files.get_spec(name)
        path = model_files.assemble(spec)
        kwargs.setdefault("model_name", spec.name)
        return cls(path, **kwargs)

    @property
    def model(self) -> str:
        return self._model_name

    @property
    def context_window(self) -> int:
        return self._n_ctx

    @property
    def model_path(self) -> Path:
        return self._model_path

    def count_tokens(self, text: str) -> int:
        return len(self._load().tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def count_prompt_tokens(self, messages: Sequence[Message]) -> int:
        """Exact token count of ``messages`` rendered with the chat template, reply cue included."""
        return len(self._tokenize_chat(messages))

    async def complete(self, request: LLMRequest) -> LLMResponse:
        # A thread cannot be cancelled, so a cancelled call (Ctrl-C, SIGTERM, a timeout) tells
        # the generation to stop at its next token instead of running to max_tokens.
        cancelled = threading.Event()
        async with self._loop_lock():
            try:
                return await asyncio.to_thread(self._complete_blocking, request, cancelled)
            except asyncio.CancelledError:
                cancelled.set()
                raise

    def close(self) -> None:
        """Free the model's memory; a later call loads it again."""
        with self._model_lock, self._load_lock:
            if self._llm is not None:
                self._llm.close()
                self._llm = None

    def _loop_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._loop_locks.get(loop)
        if lock is None:
            lock = self._loop_locks[loop] = asyncio.Lock()
        return lock

    def _load(self) -> Llama:
        with self._load_lock:
            if self._llm is None:
                self._llm, self._formatter = self._open_model()
            return self._llm

    def _open_model(self) -> tuple[Llama, Jinja2ChatFormatter]:
        require_extra("local", f"the local model {self._model_path.stem}")
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        if not self._model_path.is_file():
            raise LLMError(
                f"Local model file {self._model_path} does not exist; run ./scripts/setup.sh "
                "or `python -m cambrian.llm.model_files assemble --all`."
            )
        try:
            llm = Llama(
                model_path=str(self._model_path),
                n_ctx=self._n_ctx,
                n_threads=self._n_threads,
                n_threads_batch=self._n_threads,
                n_batch=self._n_batch,
                seed=self._seed,
                verbose=False,
            )
        except ValueError as error:
            raise LLMError(f"llama.cpp could not load {self._model_path}: {error}") from error
        template = llm.metadata.get("tokenizer.chat_template", _CHATML_TEMPLATE)
        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=llm._model.token_get_text(eos_id) if eos_id != -1 else "",
            bos_token=llm._model.token_get_text(bos_id) if bos_id != -1 else "",
            add_generation_prompt=True,
        )
        return llm, formatter

    def _tokenize_chat(self, messages: Sequence[Message]) -> list[int]:
        llm = self._load()
        assert self._formatter is not None
        # llama-cpp-python types messages as per-role TypedDicts; plain dicts are what it reads.
        chat: list[Any] = [{"role": m.role, "content": m.content} for m in messages]
        rendered = self._formatter(messages=chat)
        return llm.tokenize(
            rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
        )

    def _complete_blocking(self, request: LLMRequest,
                           cancelled: threading.Event | None = None) -> LLMResponse:
        from llama_cpp import LogitsProcessorList, StoppingCriteriaList

        params = request.params
        stop_when = StoppingCriteriaList([lambda _tokens, _logits: bool(cancelled and cancelled.is_set())])
        with self._model_lock:
            if cancelled is not None and cancelled.is_set():
                raise LLMError("the call was cancelled before it started")
            started = time.perf_counter()
            llm = self._load()
            prompt = self._prepare(llm, request)
            grammar = self._compiled_grammar(llm, params.grammar) if params.grammar else None
            seed = params.seed if params.seed is not None else self._seed_sequence.randrange(2**31)
            top_p = params.top_p if params.top_p is not None else _DEFAULT_TOP_P
            lazy = None
            if grammar is not None and self._lazy_grammar:
                assert params.grammar is not None
                lazy = LazyGrammar(llm, params.grammar, prompt_tokens=len(prompt.tokens),
                                   temperature=params.temperature, top_p=top_p, seed=seed)
            try:
                result: Any = llm.create_completion(
                    prompt=prompt.tokens,
                    max_tokens=params.max_tokens,
                    temperature=params.temperature,
                    top_p=top_p,
                    stop=list(params.stop),
                    seed=seed,
                    grammar=None if lazy is not None else grammar,
                    logits_processor=LogitsProcessorList([lazy]) if lazy is not None else None,
                    stopping_criteria=stop_when,
                )
                self._prompt_states.save(llm)
            except (RuntimeError, ValueError) as error:
                raise LLMError(f"llama.cpp failed while generating: {error}") from error
            finally:
                if lazy is not None:
                    self.last_grammar_stats = (lazy.steps, lazy.full_masks)
                    lazy.close()
            latency = time.perf_counter() - started
            self.last_completion_tokens = int(result["usage"]["completion_tokens"])

        choice = result["choices"][0]
        return LLMResponse(
            text=choice["text"],
            model=self._model_name,
            usage=Usage(
                prompt_tokens=len(prompt.tokens),
                completion_tokens=int(result["usage"]["completion_tokens"]),
                cached_prompt_tokens=prompt.cached_tokens,
            ),
            finish_reason=_finish_reason(choice.get("finish_reason")),
            latency_s=latency,
            cost_usd=0.0,
        )

    def _prepare(self, llm: Llama, request: LLMRequest) -> _PreparedPrompt:
        tokens = self._tokenize_chat(request.messages)
        needed = len(tokens) + request.params.max_tokens
        if needed > self._n_ctx:
            raise ContextOverflow(
                f"Prompt of {len(tokens)} tokens plus max_tokens={request.params.max_tokens} "
                f"needs {needed} tokens, more than the context window of {self._n_ctx} "
                f"for {self._model_name}."
            )
        self._prompt_states.restore_best(llm, tokens)
        return _PreparedPrompt(tokens=tokens, cached_tokens=_reused_prefix(llm, tokens))

    def _compiled_grammar(self, llm: Llama, grammar_text: str) -> LlamaGrammar:
        cached = self._grammars.get(grammar_text)
        if cached is None:
            cached = self._grammars[grammar_text] = _parse_grammar(llm, grammar_text)
        return cached


def _parse_grammar(llm: Llama, grammar_text: str) -> LlamaGrammar:
    """Check a GBNF grammar with llama.cpp's own parser before it reaches the sampler.

    ``LlamaGrammar.from_string`` does not parse anything; an invalid grammar would only surface
    as a null sampler inside generation, which crashes the process instead of raising.
    """
    import llama_cpp
    from llama_cpp.llama_grammar import LlamaGrammar

    grammar = LlamaGrammar.from_string(grammar_text, verbose=False)
    with _native_stderr_captured() as parser_messages:
        probe = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
    if not probe:
        detail = " ".join(parser_messages.getvalue().split())
        reason = detail or "llama.cpp rejected it (a grammar needs a `root` rule)"
        raise LLMBadRequest(f"The GBNF grammar does not parse: {reason}")
    llama_cpp.llama_sampler_free(probe)
    return grammar


@contextlib.contextmanager
def _native_stderr_captured() -> Iterator[io.StringIO]:
    """Collect what C code writes to file descriptor 2 (llama.cpp's grammar parser does)."""
    captured = io.StringIO()
    sys.stderr.flush()
    saved_fd = os.dup(2)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield captured
            finally:
                os.dup2(saved_fd, 2)
                sink.seek(0)
                captured.write(sink.read().decode("utf-8", errors="replace"))
    finally:
        os.close(saved_fd)


def _reused_prefix(llm: Llama, prompt_tokens: list[int]) -> int:
    """Prompt tokens whose KV cache ``Llama.generate`` will keep from the previous call.

    Mirrors llama-cpp-python's rule: it keeps the longest common prefix with its previous input,
    but when the whole prompt matches it re-evaluates the last token to refresh the logits,
    unless the previous call ended on exactly this prompt with live logits.
    """
    previous = llm._input_ids
    common = 0
    for old, new in zip(previous, prompt_tokens, strict=False):
        if old != new:
            break
        common += 1
    if common < len(prompt_tokens):
        return common
    if llm.n_tokens == len(prompt_tokens) and not getattr(llm, "_requires_eval", True):
        return common
    return max(common - 1, 0)


def _finish_reason(raw: object) -> FinishReason:
    if raw == "stop":
        return "stop"
    if raw == "length":
        return "length"
    return "other"


def _available_cores() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return max(os.cpu_count() or 1, 1)
