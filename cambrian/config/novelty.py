"""The `novelty:` section of the run config: novelty rejection of near-copies
(``cambrian/search/novelty.py``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from cambrian.config.strict import StrictModel


class NoveltyConfig(StrictModel):
    """Novelty rejection sampling (seed 000 §3.2, Appendix B: threshold 0.95, then an LLM judge).

    ``judge: auto`` asks the judge when its model is remote and not when it is local: a local
    judge call costs about as much time as the proposal it would save an evaluation of, and a
    1.5B judge almost always answers "different" (measured: benchmarks/small_model.py).
    ``threshold: auto`` is the seed's 0.95 with a judge; without one it is 0.999, so that only
    near-copies are refused: with the bundled MiniLM embeddings, edits of one to three lines
    that changed what a 30-line block does measured 0.996-0.997. Above the threshold, a proposal
    that differs from its nearest program only in comments or layout is refused without asking
    the judge; without a judge and with the automatic threshold every other proposal passes
    (``search/novelty.py``). ``judge_when: cost`` asks the judge only when the evaluation it may
    save is measured to cost more than the call (``search/novelty_cost.py``)."""

    enabled: bool = Field(
        True,
        description="Refuse proposals too close to a program the run already has (embedding "
                    "similarity, then optionally an LLM judge).",
    )
    embedding: Literal["local", "openai"] = Field(
        "local",
        description="Where embeddings come from: local (the bundled MiniLM, "
                    "cambrian[novelty]) or openai (an embeddings API).",
    )
    embedding_model: str = Field("text-embedding-3-small", description="Embedding model name "
                                                                       "for embedding: "
                                                                       "openai.")
    base_url: str | None = Field(
        None,
        description="Address of the embeddings API for embedding: openai; None: OpenAI's.",
    )
    api_key_env: str | None = Field(
        None,
        description="Environment variable holding the embeddings API's key.",
    )
    threshold: float | Literal["auto"] = Field(
        "auto",
        description="Cosine similarity above which a proposal is a near-copy; auto: 0.95 with "
                    "a judge, else 0.999.",
    )
    judge: bool | Literal["auto"] = Field(
        "auto",
        description="Above the threshold an LLM judge decides; auto: only when its model is "
                    "remote.",
    )
    judge_model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the first model.",
    )
    judge_when: Literal["cost", "always"] = Field(
        "cost",
        description="cost: ask the judge only when the run's median evaluation takes longer "
                    "than the judge model's median call (its USD counted at max_wall_time_s / "
                    "max_cost_usd when both caps are set), else evaluate the near-copy; "
                    "always: ask it for every near-copy.",
    )
    max_attempts: int = Field(
        3, ge=0,
        description="Rejections per generation before accepting anyway.",
    )

    @field_validator("threshold")
    @classmethod
    def _threshold_range(cls, value: float | str) -> float | str:
        if isinstance(value, float) and not 0 < value <= 1:
            raise ValueError("novelty.threshold must lie in (0, 1] (or be auto)")
        return value
