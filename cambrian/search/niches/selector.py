"""The ``niches`` selector: every evaluated program is recorded; the parent is drawn niche first
by the :class:`~cambrian.search.niches.sampler.NicheSampler`.

Nothing is decided in ``add``, so replaying the history on resume is trivially exact: the
archive is rebuilt from the records and the stored tags at each draw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cambrian.core.events import Event
from cambrian.search.algorithm import ParentSample, ProgramRecord, Selector, SelectorContext
from cambrian.search.niches.sampler import NicheInputs, NicheSampler


class NicheSelector(Selector):
    def __init__(self, context: SelectorContext) -> None:
        super().__init__(context)
        self.sampler = NicheSampler()

    def attach_niches(self, inputs: NicheInputs) -> None:
        self.sampler.attach(inputs)

    def add(self, program: ProgramRecord, rng: np.random.Generator) -> list[Event]:
        self.record(program)
        return []

    def sample(self, rng: np.random.Generator) -> ParentSample | None:
        return self.sampler.sample(self.programs, rng)

    def describe(self) -> dict[str, Any]:
        return {"programs": len(self.programs), **self.sampler.describe(self.programs)}
