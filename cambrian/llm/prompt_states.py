"""Keep the KV caches of a few recent prompts, so that interleaved requests do not evict each
other's prefix.

llama.cpp reuses the KV cache of the longest prefix a prompt shares with the *previous* call.
A run interleaves mutation prompts (which share their system message and often the parent
program) with short side requests (the novelty judge, the scratchpad); each side request used to
throw the mutation prefix away, so the next mutation prompt was evaluated from its first token
again. This cache saves the model state after each call and, before the next one, restores the
saved state that shares the longest prefix with the new prompt when that beats what the
context holds.

Only the KV state, the token ids and their count are saved: llama-cpp-python's own
``save_state`` also copies a logits buffer of hundreds of megabytes that sampling does not use.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_GAIN_TOKENS = 32  # restoring costs a memory copy; not worth it for a few tokens


@dataclass
class _SavedState:
    tokens: np.ndarray  # the token ids the state holds
    data: Any  # ctypes buffer from llama_state_get_data
    size: int


def common_prefix(a: np.ndarray | list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    left = np.asarray(a[:n])
    right = np.asarray(b[:n])
    differ = np.flatnonzero(left != right)
    return int(differ[0]) if differ.size else n


class PromptStates:
    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self._states: OrderedDict[int, _SavedState] = OrderedDict()
        self._next_key = 0
        self.restores = 0

    def save(self, llm: Any) -> None:
        """Remember the state the model holds now (its prompt and reply)."""
        import llama_cpp

        if self.capacity <= 0 or llm.n_tokens == 0:
            return
        tokens = np.array(llm.input_ids[: llm.n_tokens], dtype=np.intc)
        for key, saved in list(self._states.items()):  # a state this one extends is redundant
            if len(saved.tokens) <= len(tokens) and common_prefix(tokens, saved.tokens.tolist()) \
                    == len(saved.tokens):
                del self._states[key]
        size = llama_cpp.llama_state_get_size(llm._ctx.ctx)
        buffer = (ctypes.c_uint8 * int(size))()
        written = int(llama_cpp.llama_state_get_data(llm._ctx.ctx, buffer, size))
        self._states[self._next_key] = _SavedState(tokens, buffer, written)
        self._next_key += 1
        while len(self._states) > self.capacity:
            self._states.popitem(last=False)

    def restore_best(self, llm: Any, prompt: list[int]) -> int:
        """Load the saved state sharing the longest prefix with ``prompt`` when it shares at
        least :data:`MIN_GAIN_TOKENS` more than the model's current state; the prefix length
        the model then holds in common with ``prompt``."""
        import llama_cpp

        current = common_prefix(llm.input_ids[: llm.n_tokens], prompt)
        best_key, best = None, current
        for key, saved in self._states.items():
            shared = common_prefix(saved.tokens, prompt)
            if shared > best:
                best_key, best = key, shared
        if best_key is None or best < current + MIN_GAIN_TOKENS:
            return current
        saved = self._states[best_key]
        self._states.move_to_end(best_key)
        if int(llama_cpp.llama_state_set_data(llm._ctx.ctx, saved.data, saved.size)) != saved.size:
            raise RuntimeError("llama.cpp could not restore a saved prompt state")
        n = len(saved.tokens)
        llm.input_ids[:n] = saved.tokens
        llm.n_tokens = n
        llm._requires_eval = True  # the logits of the restored state are not live
        self.restores += 1
        return best
