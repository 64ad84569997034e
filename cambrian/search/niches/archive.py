"""The niche archive (seed 002 §10.3 "QD archive"), with seed 004 §10.3's age-based culling.

It is rebuilt from two things the run stores: the evaluated programs (the selector's records)
and the strategy tags (``cambrian/meta/strategy_tags.py``), so a resumed run rebuilds it as it
was, whatever order the tags arrived in. Per strategy family (a *niche*; a correct program not
tagged yet sits in the "untagged" one):

- the **champion** (hall of fame): the best program ever tagged with that family;
- the **elites**: its best ``max_per_niche`` programs that are still alive;
- **culling**: a program more than ``max_age`` generations older than the newest program is no
  longer alive (no longer a parent, it stays in the store), unless it is its niche's champion;
- **stagnation**: the children of the niche's programs since its champion was found; ``window``
  of them without a better program make the niche stagnant;
- **proposals**: children its programs have had so far (a new niche has had few).

The **elite buffer** is the best ``elite_size`` alive programs over all niches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from cambrian.config.niches import NichesConfig
from cambrian.meta.strategy_vocabulary import UNTAGGED
from cambrian.search.algorithm import ProgramRecord


def _rank_key(program: ProgramRecord) -> tuple[float, int]:
    # Best first; ties go to the older program.
    return (-(program.fitness if program.fitness is not None else float("-inf")), program.id)


@dataclass
class Niche:
    family: str
    members: list[ProgramRecord]  # every correct program of the family, best first
    elites: list[ProgramRecord]  # the best max_per_niche alive members (the champion first)
    proposals: int = 0  # children its members have had (pending ones too)
    since_best: int = 0  # evaluated children of its members since the champion was found
    stagnant: bool = False

    @property
    def champion(self) -> ProgramRecord:
        return self.members[0]

    @property
    def best_fitness(self) -> float:
        assert self.champion.fitness is not None
        return self.champion.fitness

    def is_new(self, proposals: int) -> bool:
        """A tagged niche whose programs have had fewer than ``proposals`` children."""
        return self.family != UNTAGGED and self.proposals < proposals


@dataclass
class NicheArchive:
    niches: dict[str, Niche] = field(default_factory=dict)
    elite_buffer: list[ProgramRecord] = field(default_factory=list)
    culled: frozenset[int] = frozenset()
    generation: int = 0  # the newest program's generation (ages count from it)

    @property
    def hall_of_fame(self) -> dict[str, ProgramRecord]:
        """The best program ever seen of each niche."""
        return {family: niche.champion for family, niche in self.niches.items()}

    def niche_of(self, program_id: int) -> Niche | None:
        return next((n for n in self.niches.values()
                     if any(m.id == program_id for m in n.members)), None)

    def alive(self, program_id: int) -> bool:
        return program_id not in self.culled

    def summary(self) -> dict[str, dict[str, float | int | bool]]:
        """Per niche: members, elites, champion id and fitness, proposals, stagnation."""
        return {family: {"members": len(n.members), "elites": len(n.elites),
                         "champion": n.champion.id, "best_fitness": n.best_fitness,
                         "proposals": n.proposals, "since_best": n.since_best,
                         "stagnant": n.stagnant}
                for family, n in sorted(self.niches.items())}


def build_archive(programs: Iterable[ProgramRecord], family_of: Callable[[int], str],
                  settings: NichesConfig) -> NicheArchive:
    """The niche archive of ``programs`` (every evaluated one, correct or not) whose families
    ``family_of`` gives."""
    everything = list(programs)
    if not everything:
        return NicheArchive()
    generation = max(p.generation for p in everything)
    groups: dict[str, list[ProgramRecord]] = {}
    family_by_id: dict[int, str] = {}
    for program in everything:
        if program.correct and program.fitness is not None:
            family = family_of(program.id)
            family_by_id[program.id] = family
            groups.setdefault(family, []).append(program)
    culled: set[int] = set()
    niches: dict[str, Niche] = {}
    for family, members in groups.items():
        members.sort(key=_rank_key)
        if settings.max_age > 0:  # members[0], the champion, is never culled
            culled.update(m.id for m in members[1:]
                          if generation - m.generation > settings.max_age)
        alive = [m for m in members if m.id not in culled]
        niches[family] = Niche(family, members, alive[:settings.max_per_niche],
                               proposals=sum(m.children for m in members))
    for program in everything:  # children in evaluation order: stagnation
        parent_family = family_by_id.get(program.parent_id) \
            if program.parent_id is not None else None
        if parent_family is None:
            continue
        niche = niches[parent_family]
        if program.id > niche.champion.id:
            niche.since_best += 1
    for niche in niches.values():
        niche.stagnant = niche.since_best >= settings.stagnation_window
    alive_all = sorted((m for n in niches.values() for m in n.members if m.id not in culled),
                       key=_rank_key)
    return NicheArchive(niches, alive_all[:settings.elite_size], frozenset(culled), generation)
