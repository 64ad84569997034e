"""``niches``: strategy niches alone (seed 002 §10.3-10.4). An LLM tags each correct program
with its strategy family; the parent is drawn niche first (stagnant niches lose share, new ones
get a bonus), within the niche by rank; old programs that are not their niche's champion are
no longer parents; the inspirations are the most distant elites of other niches. Its settings
are the run config's ``niches:`` section (``cambrian/config/niches.py``)."""

from __future__ import annotations

from cambrian.config import StrictModel
from cambrian.search.algorithm_spec import AlgorithmSpec
from cambrian.search.niches.selector import NicheSelector


class NichesOptions(StrictModel):
    """No options of its own: the ``niches:`` section holds them (shared with the tagger)."""


SPEC = AlgorithmSpec(
    "niches", "strategy niches: LLM-tagged families, niche-first parents, age culling, "
          "distant inspirations", NichesOptions, NicheSelector)
