"""Niche-aware parent selection, usable by any selector (seed 002 §10.2-10.3, seed 004 §10.2).

First a niche, then a parent within it:

1. **niche**: niches are ranked by their champion's fitness and get a share ~ rank^-niche_alpha;
   a stagnant niche's share is multiplied by ``stagnant_share`` and a new niche's (fewer than
   ``new_niche_proposals`` children so far) by ``1 + new_niche_bonus``;
2. **parent**: a power law over the niche's elites' ranks (``parent_alpha``); culled programs
   (too old, not champions) are not elites, so never parents;
3. **inspirations**: the elites of other niches most distant from the parent by the diversity
   distance (``distance.py``); with a single niche, its other elites.

A selector holds a :class:`NicheSampler` and calls :meth:`NicheSampler.sample` with its records
(``NicheSelector`` in ``selector.py`` is the plain one). The composition root hands the sampler
the run's tag book, settings and sources through :meth:`NicheSampler.attach`, for any selector
that has ``attach_niches`` (:class:`NicheAware`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from cambrian.config.niches import NichesConfig
from cambrian.meta.strategy_tags import TagBook
from cambrian.meta.strategy_vocabulary import UNTAGGED
from cambrian.search.algorithm import ParentSample, ProgramRecord
from cambrian.search.niches.archive import Niche, NicheArchive, build_archive
from cambrian.search.niches.distance import DiversityDistance
from cambrian.search.selection import power_law_probabilities

Sources = Callable[[set[int]], Mapping[int, str | None]]


@dataclass(frozen=True)
class NicheInputs:
    """What a niche-aware selector is handed by the composition root."""

    settings: NichesConfig
    book: TagBook
    sources: Sources | None = None  # candidate ids -> their sources (the store's)


@runtime_checkable
class NicheAware(Protocol):
    """A selector that reads strategy niches: the composition root builds the strategy tagger
    for it and hands it the tags."""

    def attach_niches(self, inputs: NicheInputs) -> None: ...


def tied_ranks(fitness: list[float]) -> np.ndarray:
    """Rank 1 for the best; equal fitness shares the mean of its ranks (so a tie between two
    niches is no reason to prefer the one whose name sorts first)."""
    values = np.asarray(fitness, dtype=float)
    ranks = np.empty(values.size)
    order = np.argsort(-values, kind="stable")
    ranks[order] = np.arange(1, values.size + 1)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def niche_probabilities(niches: list[Niche], settings: NichesConfig) -> np.ndarray:
    """Each niche's share of the next parent (see the module's docstring); uniform when every
    weight is 0 (every niche stagnant with ``stagnant_share`` 0)."""
    if not niches:
        return np.zeros(0)
    ranks = tied_ranks([n.best_fitness for n in niches]) ** -settings.niche_alpha
    weights = np.array([
        rank * (settings.stagnant_share if n.stagnant else 1.0)
        * ((1.0 + settings.new_niche_bonus) if n.is_new(settings.new_niche_proposals) else 1.0)
        for rank, n in zip(ranks, niches, strict=True)])
    total = float(weights.sum())
    if total <= 0 or not np.isfinite(total):
        return np.full(len(niches), 1.0 / len(niches))
    return weights / total


class NicheSampler:
    def __init__(self, settings: NichesConfig | None = None) -> None:
        self.inputs = NicheInputs(settings or NichesConfig(), TagBook())
        self._sources: dict[int, str | None] = {}
        self.distance = self._make_distance()

    def attach(self, inputs: NicheInputs) -> None:
        self.inputs = inputs
        self._sources = {}
        self.distance = self._make_distance()

    @property
    def settings(self) -> NichesConfig:
        return self.inputs.settings

    @property
    def book(self) -> TagBook:
        return self.inputs.book

    def _make_distance(self) -> DiversityDistance:
        return DiversityDistance(self.settings.distance, self.book.family,
                                 self._source if self.inputs.sources is not None else None)

    def _source(self, candidate_id: int) -> str | None:
        if candidate_id not in self._sources and self.inputs.sources is not None:
            self._sources.update(self.inputs.sources({candidate_id}))
        return self._sources.get(candidate_id)

    def archive(self, programs: Mapping[int, ProgramRecord]) -> NicheArchive:
        return build_archive(programs.values(), self.book.family, self.settings)

    def sample(self, programs: Mapping[int, ProgramRecord],
               rng: np.random.Generator) -> ParentSample | None:
        """A parent (niche first), its inspirations and a note naming its strategy; None when
        no program is correct."""
        archive = self.archive(programs)
        niches = sorted(archive.niches.values(), key=lambda n: n.family)
        if not niches:
            return None
        p = niche_probabilities(niches, self.settings)
        niche = niches[int(rng.choice(len(niches), p=p))]
        weights = power_law_probabilities([m.fitness for m in niche.elites],  # type: ignore[misc]
                                          self.settings.parent_alpha)
        parent = niche.elites[int(rng.choice(len(niche.elites), p=weights))]
        inspirations = self.inspirations(parent, niche, archive)
        return ParentSample(parent.id, parent.island, tuple(p.id for p in inspirations),
                            guidance=self.note(parent, inspirations),
                            intent_weights=self.intent_mix(niche))

    def intent_mix(self, niche: Niche) -> dict[str, float]:
        """The niche's intent multipliers: a stagnant niche's parents lean to a new approach,
        a new niche's to developing the one it has; others use the schedule as it is."""
        if niche.stagnant:
            return dict(self.settings.stagnant_intents)
        if niche.is_new(self.settings.new_niche_proposals):
            return dict(self.settings.new_intents)
        return {}

    def inspirations(self, parent: ProgramRecord, niche: Niche,
                     archive: NicheArchive) -> list[ProgramRecord]:
        """The ``inspirations`` elites of other niches farthest from the parent (the parent's
        own niche's other elites when there is no other niche), shown nearest last."""
        wanted = self.settings.inspirations
        if wanted <= 0:
            return []
        others = [m for n in archive.niches.values() if n.family != niche.family
                  for m in n.elites]
        if not others:
            others = [m for m in niche.elites if m.id != parent.id]
        scored = sorted(others, key=lambda m: (-self.distance(parent, m), m.id))
        return scored[:wanted]

    def note(self, parent: ProgramRecord, inspirations: list[ProgramRecord]) -> str:
        """One line for the prompt: the parent's family and key idea and, when shown, the
        other families the inspirations come from."""
        family = self.book.family(parent.id)
        if not self.settings.prompt_note or family == UNTAGGED:
            return ""
        idea = self.book.key_idea(parent.id)
        text = f"Strategy of this program: {family}" + (f" ({idea})." if idea else ".")
        others = sorted({self.book.family(p.id) for p in inspirations} - {family, UNTAGGED})
        if others:
            text += (" The other programs shown take different approaches ("
                     + ", ".join(others) + "); borrow what could help this one.")
        return text

    def describe(self, programs: Mapping[int, ProgramRecord]) -> dict[str, object]:
        archive = self.archive(programs)
        return {"niches": archive.summary(), "culled": len(archive.culled),
                "elite_buffer": [p.id for p in archive.elite_buffer]}
