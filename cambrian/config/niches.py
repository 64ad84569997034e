"""The `niches:` section of the run config: strategy tagging and the strategy-niche archive
(seed 002 §10.3-10.4, seed 004 §10.3-10.4; cambrian/meta/strategy_tagger.py,
cambrian/search/niches/)."""

from __future__ import annotations

from pydantic import Field, model_validator

from cambrian.config.strict import StrictModel


class DistanceWeights(StrictModel):
    """Seed 004's diversity distance d(a, b) = strategy * d_strategy + behaviour * d_behaviour
    + structure * d_structure (each term in [0, 1]; a term neither program can give is left
    out and the others are re-weighted)."""

    strategy: float = Field(
        0.4, ge=0,
        description="0 when both programs have the same family, else 1.",
    )
    behaviour: float = Field(
        0.4, ge=0,
        description="Cosine distance of per-case scores (else metrics).",
    )
    structure: float = Field(
        0.2, ge=0,
        description="1 - difflib's ratio of the two sources' lines.",
    )

    @model_validator(mode="after")
    def _some_weight(self) -> DistanceWeights:
        if self.strategy + self.behaviour + self.structure <= 0:
            raise ValueError("niches.distance: at least one weight must be positive")
        return self


class NichesConfig(StrictModel):
    """Strategy niches. An LLM tags every correct program with its strategy family (greedy,
    beam search, simulated annealing, DP, local search...) and key idea; the tags are stored
    (``strategy_tagged`` events), shown by ``cambrian status`` and the web UI, and read by a
    selector that uses niches (``--search niches``, which tags whatever ``enabled`` says)."""

    enabled: bool = Field(
        False,
        description="Tag programs also when the search algorithm does not use niches (status "
                    "and UI only).",
    )
    model: str | None = Field(
        None,
        description="Label of an llm.models entry; default: the cheapest model (lowest known "
                    "price per token), else a local one, else the first.",
    )
    max_tokens: int = Field(48, ge=8, le=400, description="Reply budget of one tagging call, "
                                                          "in tokens (the reply is one line).")
    max_lines: int = Field(60, ge=5, description="Lines of the EVOLVE-BLOCK (or program) shown.")
    per_step: int = Field(4, ge=1, description="Programs tagged per side step, at most.")
    new_family_after: int = Field(
        2, ge=1,
        description="An unknown family joins the vocabulary once this many programs were "
                    "given it, or at once when the model repeats it after being shown the "
                    "vocabulary (confirm_new).",
    )
    confirm_new: bool = Field(
        True,
        description="A new family joins the vocabulary at once when the model repeats it "
                    "after being shown the vocabulary.",
    )
    max_per_niche: int = Field(
        5, ge=1,
        description="Archive: the best max_per_niche programs of each family are its elites; "
                    "the best elite_size overall are the elite buffer; the best ever of each "
                    "is its hall of fame.",
    )
    elite_size: int = Field(
        5, ge=1,
        description="The best this many programs overall form the elite buffer.",
    )
    stagnation_window: int = Field(
        8, ge=1,
        description="A niche whose best was not beaten by its last stagnation_window children "
                    "is stagnant: its share of parents is multiplied by stagnant_share.",
    )
    stagnant_share: float = Field(
        0.25, ge=0, le=1,
        description="Multiplier of a stagnant niche's share of parents.",
    )
    new_niche_bonus: float = Field(
        1.0, ge=0,
        description="A niche whose programs have had fewer than new_niche_proposals children "
                    "gets its share multiplied by 1 + new_niche_bonus.",
    )
    new_niche_proposals: int = Field(
        3, ge=0,
        description="A niche whose programs have had fewer children than this counts as new "
                    "and gets new_niche_bonus.",
    )
    niche_alpha: float = Field(
        0.5, ge=0,
        description="Niches ranked by their best: share ~ rank^-alpha.",
    )
    parent_alpha: float = Field(1.0, ge=0, description="Parent choice within a niche by rank "
                                                       "among its elites: p ~ rank^-alpha.")
    max_age: int = Field(
        50, ge=0,
        description="Age-based culling (seed 004 §10.3): a program more than max_age "
                    "generations older than the newest is no longer a parent unless it is its "
                    "niche's champion (0: never culled).",
    )
    inspirations: int = Field(2, ge=0, description="The most distant elites of other niches shown.")
    prompt_note: bool = Field(
        True,
        description="The prompt names the parent's family and key idea.",
    )
    stagnant_intents: dict[str, float] = Field(
        default_factory=lambda: {"strategy": 3.0, "crossover": 2.0},
        description="Intent mix for a parent from a stagnant niche: multipliers of the "
                    "mutation schedule's intent weights, by intent name (seed 002 §10.4: a "
                    "niche that stopped improving is left by a new approach or a borrowed one).",
    )
    new_intents: dict[str, float] = Field(
        default_factory=lambda: {"refinement": 2.0, "tuning": 2.0},
        description="Intent mix for a parent from a new niche (fewer children than "
                    "new_niche_proposals): multipliers by intent name, so a fresh approach is "
                    "developed before it is judged.",
    )
    distance: DistanceWeights = Field(
        default_factory=DistanceWeights,
        description="Weights of the diversity distance between two programs (strategy, "
                    "behaviour, structure).",
    )
