"""``contest``: the contest systems' strategy layer together (seeds 002 §10.3-10.6, §10.10 and
004 §10.3-10.10): strategy niches (an LLM tags every correct program; niche-first parents,
age culling that keeps champions, distant inspirations), search phases (exploration,
exploitation, polishing: each its intent mix, temperature and models, its share of the budget,
adaptive transitions and stagnation recovery), self-reflection every few evaluations and, where
the task declares no sub-problems, sub-problems the model proposes from the initial program's
per-case results (``decomposition.propose``). Each part also works alone with any algorithm
(``niches:``, ``phases:``, ``reflection:`` ``enabled: true``, ``decomposition:``); their settings
come from those sections."""

from __future__ import annotations

from cambrian.config import StrictModel
from cambrian.search.algorithm_spec import AlgorithmSpec
from cambrian.search.niches.selector import NicheSelector


class ContestOptions(StrictModel):
    """No options of its own: ``niches:``, ``phases:``, ``reflection:`` and
    ``decomposition:`` hold them."""


SPEC = AlgorithmSpec(
    "contest", "the contest strategy layer: strategy niches, search phases with a budget "
               "split, stagnation recovery, self-reflection and proposed sub-problems",
    ContestOptions, NicheSelector,
    features=frozenset({"niches", "phases", "reflection", "decomposition"}))
