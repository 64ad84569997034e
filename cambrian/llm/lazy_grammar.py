"""Grammar-constrained sampling at about the cost of plain sampling.

llama-cpp-python puts the grammar first in its sampler chain, so the grammar is checked against
every token of the vocabulary at every step: with Qwen's 151,936 tokens that costs more than the
model's own forward pass on two CPU cores (measured: benchmarks/grammar_speed.py). llama.cpp's
own command-line sampler avoids it the way this module does: draw a token from the model's
distribution first, ask the grammar about that one token, and only when the grammar refuses it
mask the whole vocabulary and draw again. The result is a draw from the same constrained
distribution (a refused draw is redrawn from the masked one); only the cost changes.

:class:`LazyGrammar` is a llama-cpp-python logits processor that does the drawing itself and
hands the sampler chain a distribution with a single finite logit, so the chain after it
(penalties, top-k, temperature) can only confirm the choice.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class LazyGrammar:
    def __init__(self, llm: Any, grammar_text: str, *, prompt_tokens: int, temperature: float,
                 top_p: float, seed: int, top_k: int = 40, min_p: float = 0.05) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar_text.encode("utf-8"), b"root")
        if not self._sampler:
            raise ValueError("llama.cpp could not build the grammar sampler")
        self._n_vocab = llm.n_vocab()
        self._accepted = prompt_tokens  # tokens of the sequence the grammar has seen
        self._temperature = temperature
        self._top_p = top_p
        self._top_k = top_k
        self._min_p = min_p
        self._rng = np.random.default_rng(seed)
        self._one = (llama_cpp.llama_token_data * 1)()
        self._one_array = llama_cpp.llama_token_data_array(
            data=self._one, size=1, selected=-1, sorted=False)
        self._all = np.recarray((self._n_vocab,), dtype=_TOKEN_DATA)
        self._all_array = llama_cpp.llama_token_data_array(
            data=self._all.ctypes.data_as(llama_cpp.llama_token_data_p), size=self._n_vocab,
            selected=-1, sorted=False)
        self.full_masks = 0  # steps where the first draw was refused (for the benchmark)
        self.steps = 0

    def close(self) -> None:
        if getattr(self, "_sampler", None):
            self._llama_cpp.llama_sampler_free(self._sampler)
            self._sampler = None

    def __del__(self) -> None:
        self.close()

    # ------------------------------------------------------------------ the processor

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        for token in input_ids[self._accepted:]:  # what was generated since the last step
            self._llama_cpp.llama_sampler_accept(self._sampler, int(token))
        self._accepted = len(input_ids)
        self.steps += 1
        scores = np.asarray(logits, dtype=np.float32)
        token = self._draw(scores)
        if not self._allows(token):
            self.full_masks += 1
            token = self._draw(np.where(self._allowed_mask(scores), scores, -np.inf))
        chosen = np.full(scores.shape, -np.inf, dtype=np.float32)
        chosen[token] = 0.0
        return chosen

    # ------------------------------------------------------------------ grammar checks

    def _allows(self, token: int) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, 0.0, 0.0
        self._one_array.size, self._one_array.selected = 1, -1
        self._llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(self._one_array))
        return math.isfinite(self._one[0].logit)

    def _allowed_mask(self, scores: np.ndarray) -> np.ndarray:
        self._all.id[:] = np.arange(self._n_vocab, dtype=np.intc)
        self._all.logit[:] = 0.0
        self._all.p[:] = 0.0
        self._all_array.size, self._all_array.selected = self._n_vocab, -1
        self._llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(self._all_array))
        allowed = np.zeros(self._n_vocab, dtype=bool)
        allowed[self._all.id[: self._all_array.size]] = np.isfinite(
            self._all.logit[: self._all_array.size])
        if not allowed.any():
            raise RuntimeError("the grammar allows no token here")
        return allowed

    # ------------------------------------------------------------------ drawing

    def _draw(self, scores: np.ndarray) -> int:
        """One token from ``scores`` as llama.cpp's default chain would draw it: top-k, top-p,
        min-p, then temperature (greedy at temperature 0)."""
        finite = np.isfinite(scores)
        if self._temperature <= 0:
            return int(np.argmax(np.where(finite, scores, -np.inf)))
        k = min(self._top_k, int(finite.sum())) if self._top_k > 0 else int(finite.sum())
        top = np.argpartition(-np.where(finite, scores, -np.inf), k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        logits = scores[top].astype(np.float64)
        probs = np.exp(logits - logits[0])
        probs /= probs.sum()
        keep = int(np.searchsorted(np.cumsum(probs), self._top_p) + 1)  # top-p
        keep = max(1, min(keep, len(top)))
        keep = max(1, min(keep, int((probs >= self._min_p * probs[0]).sum())))  # min-p
        logits = logits[:keep] / self._temperature
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        return int(top[int(self._rng.choice(keep, p=probs))])
