"""Checks of GBNF grammars in llama.cpp itself: whether its parser takes a grammar, and whether
a grammar lets a model emit exactly a given text (with the 0.5B's tokenizer)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

try:
    import llama_cpp
except ImportError:  # the wheel may not be installed yet on a fresh machine
    llama_cpp = None

TOKENIZER_MODEL = "qwen2.5-coder-0.5b-instruct"


def native_parse_ok(grammar: str) -> bool:
    """llama.cpp's own GBNF parser (LlamaGrammar.from_string alone does not parse)."""
    compiled = llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)
    sampler = llama_cpp.llama_sampler_init_grammar(None, compiled._grammar.encode(), compiled._root.encode())
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


def tokenizer_model_path() -> Path | None:
    try:
        from cambrian.llm.model_files import model_path

        path = model_path(TOKENIZER_MODEL)
    except Exception:
        path = Path.home() / ".cache" / "cambrian" / "models" / f"{TOKENIZER_MODEL}.gguf"
    return path if path.is_file() else None


@contextmanager
def tokenizer_vocab() -> Iterator[object]:
    """The 0.5B's tokenizer as a vocab-only model; the test is skipped where llama_cpp or the
    assembled model is not there yet."""
    if llama_cpp is None:
        pytest.skip("llama_cpp is not importable yet (llama-cpp-python is not installed)")
    path = tokenizer_model_path()
    if path is None:
        pytest.skip(f"{TOKENIZER_MODEL}.gguf is not assembled; grammar acceptance needs its tokenizer")
    model = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    try:
        yield model
    finally:
        model.close()


def accepts(model: object, grammar: str, text: str) -> bool:
    """Whether the grammar lets a model emit exactly ``text`` and then stop."""
    vocab = llama_cpp.llama_model_get_vocab(model._model.model)  # type: ignore[attr-defined]
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    assert sampler
    try:
        tokens = model.tokenize(text.encode(), add_bos=False, special=False)  # type: ignore[attr-defined]
        end = model.token_eos()  # type: ignore[attr-defined]
        for token in [*tokens, end]:
            candidate = (llama_cpp.llama_token_data * 1)()
            candidate[0].id, candidate[0].logit, candidate[0].p = token, 0.0, 0.0
            array = llama_cpp.llama_token_data_array(data=candidate, size=1, selected=-1, sorted=False)
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
            if candidate[0].logit == float("-inf"):
                return False
            if token != end:
                llama_cpp.llama_sampler_accept(sampler, token)
        return True
    finally:
        llama_cpp.llama_sampler_free(sampler)
