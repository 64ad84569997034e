"""The `database:` section of the run config: the island archive and parent selection."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cambrian.config.strict import StrictModel

ParentSelection = Literal["weighted", "power_law", "hill_climb", "beam", "best_of_n", "uniform"]


class DatabaseConfig(StrictModel):
    """Island archive and parent sampling (seed 000 §3.1, Appendix B tables)."""

    num_islands: int = Field(
        2, ge=1,
        description="Islands of the archive; each evolves apart, with migration between them.",
    )
    archive_size: int = Field(
        40, ge=1,
        description="Total elite capacity, split evenly across islands.",
    )
    elite_ratio: float = Field(
        0.3, gt=0, le=1,
        description="Share of an island's best programs counted as its elites, the pool "
                    "inspirations are drawn from first.",
    )
    archive_inspirations: int = Field(
        2, ge=0,
        description="Programs from the archive shown as inspirations in each prompt.",
    )
    top_k_inspirations: int = Field(
        1, ge=0,
        description="Best programs shown as inspirations in each prompt.",
    )
    migration_interval: int = Field(
        10, ge=1,
        description="Completed evaluations between two migrations.",
    )
    migration_rate: float = Field(
        0.1, ge=0, le=1,
        description="Share of an island's programs copied to the next island at each "
                    "migration.",
    )
    island_elitism: bool = Field(
        True,
        description="Keep each island's best program through migrations.",
    )
    parent_selection: ParentSelection = Field(
        "weighted",
        description="How a parent is drawn from an island: weighted, power_law, hill_climb, "
                    "beam, best_of_n or uniform.",
    )
    parent_selection_lambda: float = Field(
        10.0, gt=0,
        description="Sharpness of weighted parent selection (higher favours the best more).",
    )
    power_law_alpha: float = Field(
        1.0, ge=0,
        description="Exponent of power-law parent selection: p ~ rank^-alpha.",
    )
    num_beams: int = Field(5, ge=1, description="Parents kept by beam selection.")
