"""The bundled all-MiniLM-L6-v2 run in NumPy: the same BERT encoder sentence-transformers runs
(six layers, 384 wide, mean pooling over the tokens, unit length), without PyTorch.

The weights are the package's own ``model.safetensors``, read with ``safetensors.numpy``; the
tokenizer its ``tokenizer.json``, read with ``tokenizers`` (both installed with
sentence-transformers). PyTorch and transformers are what made a run with novelty on take
~560 MB more memory than one without (``benchmarks/novelty_calls.py``); this takes the weights'
90 MB and the arithmetic's scratch. The vectors agree with sentence-transformers' to a cosine of
1 - 1e-6 or closer (``tests/llm/test_minilm_numpy.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length: longer input is truncated
LAYERS = 6
HEADS = 12
EPS = 1e-12


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + EPS) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.float32(np.sqrt(2.0))))


class MiniLM:
    """``encode(texts)``: one unit vector (384 float32) per text."""

    def __init__(self, model_dir: str | Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        weights: dict[str, Any] = load_file(str(model_dir / "model.safetensors"))
        self.w = {name: np.ascontiguousarray(value, dtype=np.float32)
                  for name, value in weights.items() if name != "embeddings.position_ids"}
        for layer in range(LAYERS):  # query, key and value as one matrix (x @ qkv)
            base = f"encoder.layer.{layer}.attention.self."
            self.w[f"{base}qkv.weight"] = np.ascontiguousarray(np.concatenate(
                [self.w.pop(f"{base}{part}.weight") for part in ("query", "key", "value")]).T)
            self.w[f"{base}qkv.bias"] = np.concatenate(
                [self.w.pop(f"{base}{part}.bias") for part in ("query", "key", "value")])
            for dense in ("attention.output.dense", "intermediate.dense", "output.dense"):
                name = f"encoder.layer.{layer}.{dense}.weight"
                self.w[name] = np.ascontiguousarray(self.w[name].T)

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.vstack([self._encode_one(text) for text in texts]) if texts else \
            np.zeros((0, 384), dtype=np.float32)

    def _encode_one(self, text: str) -> np.ndarray:
        w = self.w
        ids = np.asarray(self.tokenizer.encode(text).ids, dtype=np.int64)
        n = len(ids)
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        width = x.shape[1]
        size = width // HEADS
        scale = np.float32(1.0 / np.sqrt(size))
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."
            qkv = x @ w[p + "attention.self.qkv.weight"] + w[p + "attention.self.qkv.bias"]
            q, k, v = (qkv[:, i * width:(i + 1) * width].reshape(n, HEADS, size).transpose(1, 0, 2)
                       for i in range(3))
            scores = (q @ k.transpose(0, 2, 1)) * scale
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = (scores @ v).transpose(1, 0, 2).reshape(n, width)
            attended = attended @ w[p + "attention.output.dense.weight"] \
                + w[p + "attention.output.dense.bias"]
            x = _layer_norm(attended + x, w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"])
            hidden = _gelu(x @ w[p + "intermediate.dense.weight"] + w[p + "intermediate.dense.bias"])
            out = hidden @ w[p + "output.dense.weight"] + w[p + "output.dense.bias"]
            x = _layer_norm(out + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        pooled = x.mean(axis=0)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)
