"""Novelty rejection sampling (seed 000 §3.2).

The mutable code of a proposal is embedded and compared (cosine) with the programs already on
the same island. Above the threshold, an optional LLM judge decides whether the proposal is
meaningfully different anyway; otherwise it is rejected, stored with its reason, and the engine
samples a new proposal (up to ``novelty.max_attempts`` rejections per generation).

The per-island index is a growing float32 matrix, so a lookup is one matrix-vector product:
about a millisecond per 10,000 stored programs (see benchmarks/overhead.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from cambrian.config import ConfigError, NoveltyConfig, RunConfig
from cambrian.llm.base import GenerationParams, LLMError, LLMProvider, LLMRequest, Message
from cambrian.llm.embeddings import Embedder, LocalEmbedder, OpenAIEmbedder
from cambrian.llm.ensemble import Ensemble
from cambrian.store.store import Store
from cambrian.task.blocks import block_contents

JUDGE_GRAMMAR = 'root ::= "NOVEL" | "NOT_NOVEL"'


class SimilarityIndex:
    """Unit vectors per island with their candidate ids."""

    def __init__(self) -> None:
        self._vectors: dict[int, np.ndarray] = {}
        self._ids: dict[int, list[int]] = {}

    def add(self, island: int, candidate_id: int, vector: np.ndarray) -> None:
        ids = self._ids.setdefault(island, [])
        matrix = self._vectors.get(island)
        if matrix is None:
            matrix = np.zeros((16, vector.shape[0]), dtype=np.float32)
        elif len(ids) == matrix.shape[0]:
            matrix = np.vstack([matrix, np.zeros_like(matrix)])  # double the capacity
        matrix[len(ids)] = vector
        self._vectors[island] = matrix
        ids.append(candidate_id)

    def nearest(self, island: int, vector: np.ndarray) -> tuple[float, int] | None:
        ids = self._ids.get(island)
        if not ids:
            return None
        similarities = self._vectors[island][: len(ids)] @ vector
        best = int(np.argmax(similarities))
        return float(similarities[best]), ids[best]

    def __len__(self) -> int:
        return sum(len(ids) for ids in self._ids.values())


@dataclass(frozen=True)
class NoveltyVerdict:
    novel: bool
    vector: np.ndarray
    similarity: float | None = None
    nearest_id: int | None = None
    reason: str = ""
    judge_context_id: int | None = None


class NoveltyFilter:
    def __init__(
        self,
        config: NoveltyConfig,
        embedder: Embedder,
        store: Store,
        judge: LLMProvider | None = None,
        judge_label: str = "",
        judge_is_local: bool = False,
    ) -> None:
        self.config = config
        self.embedder = embedder
        self.store = store
        self.judge = judge
        self.judge_label = judge_label
        self.judge_is_local = judge_is_local
        self.index = SimilarityIndex()

    def restore(self) -> None:
        for candidate_id, island, vector in self.store.embeddings(self.embedder.name):
            self.index.add(island, candidate_id, vector)

    async def check(self, source: str, island: int) -> NoveltyVerdict:
        vector = (await self.embedder.embed(["\n".join(block_contents(source))]))[0]
        nearest = self.index.nearest(island, vector)
        if nearest is None or nearest[0] <= self.config.threshold:
            return NoveltyVerdict(True, vector, *(nearest or (None, None)))
        similarity, nearest_id = nearest
        if self.judge is None:
            return NoveltyVerdict(False, vector, similarity, nearest_id,
                                  f"too similar to program {nearest_id} (cosine {similarity:.3f})")
        novel, context_id = await self._ask_judge(source, nearest_id)
        reason = "" if novel else (f"too similar to program {nearest_id} (cosine {similarity:.3f}) "
                                   "and the novelty judge found no meaningful difference")
        return NoveltyVerdict(novel, vector, similarity, nearest_id, reason, context_id)

    def remember(self, candidate_id: int, island: int, vector: np.ndarray) -> None:
        self.store.add_embedding(candidate_id, self.embedder.name, vector)
        self.index.add(island, candidate_id, vector)

    async def _ask_judge(self, source: str, nearest_id: int) -> tuple[bool, int]:
        assert self.judge is not None
        existing = self.store.candidate(nearest_id).source or ""
        prompt = (
            "Two versions of a program follow. Decide whether the NEW one is meaningfully "
            "different from the EXISTING one: a different algorithm, strategy or structure counts; "
            "renamed variables, reformatting, comments or small constant changes do not.\n\n"
            f"## EXISTING\n```\n{chr(10).join(block_contents(existing))}\n```\n\n"
            f"## NEW\n```\n{chr(10).join(block_contents(source))}\n```\n\n"
            "Answer with exactly one word: NOVEL or NOT_NOVEL."
        )
        request = LLMRequest(
            (Message("user", prompt),),
            GenerationParams(temperature=0.0, max_tokens=8,
                             grammar=JUDGE_GRAMMAR if self.judge_is_local else None),
        )
        try:
            response = await self.judge.complete(request)
        except LLMError as exc:
            context_id = self.store.add_context(purpose="novelty", model=self.judge_label,
                                                provider="", request=request, response=None,
                                                error=str(exc))
            return True, context_id  # no verdict: do not lose the proposal
        context_id = self.store.add_context(purpose="novelty", model=self.judge_label, provider="",
                                            request=request, response=response)
        return not response.text.strip().upper().startswith("NOT"), context_id


def build_novelty_filter(config: RunConfig, store: Store, ensemble: Ensemble) -> NoveltyFilter | None:
    settings = config.novelty
    if not settings.enabled:
        return None
    if settings.embedding == "local":
        embedder: Embedder = LocalEmbedder.shared()
    else:
        key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        embedder = OpenAIEmbedder(settings.embedding_model, settings.base_url, key)
    judge, label, local = None, "", False
    if settings.judge:
        models = {m.label: m for m in config.llm.models}
        label = settings.judge_model or config.llm.models[0].label
        if label not in models:
            raise ConfigError(f"novelty.judge_model '{label}' is not one of llm.models: {sorted(models)}")
        judge, local = ensemble.providers[label], models[label].provider == "local"
    return NoveltyFilter(settings, embedder, store, judge, label, local)
