"""The niche map as ``cambrian status`` and the web UI show it: per strategy family, how many
correct programs it has, its best (the champion) and the champion's key idea."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.meta.strategy_tags import StrategyTagged, TagBook
from cambrian.meta.strategy_vocabulary import UNTAGGED
from cambrian.store.store import Store

ELITES_SHOWN = 5


@dataclass(frozen=True)
class NicheLine:
    family: str
    count: int  # correct programs tagged with it
    best_score: float
    best_id: int
    key_idea: str  # the best program's
    elites: list[int] = field(default_factory=list)  # its best programs' ids, best first


def promote_after(config: dict[str, Any]) -> int:
    """``niches.new_family_after`` of a stored run config (its default when absent)."""
    value = (config.get("niches") or {}).get("new_family_after", 2)
    return int(value) if isinstance(value, int) and value >= 1 else 2


def niche_map(store: Store, objective: Objective, promote: int = 2) -> list[NicheLine]:
    """One line per family with a correct program, best niche first; the correct programs not
    tagged yet last, as "untagged". Empty when the run tagged nothing."""
    events = store.events.of_type(StrategyTagged)
    if not events:
        return []
    book = TagBook.from_events(events, promote)
    scores = {i: s for i, s in store.candidates.scores(CandidateStatus.CORRECT).items()
              if s is not None}
    groups: dict[str, list[int]] = {}
    for candidate_id in scores:
        groups.setdefault(book.family(candidate_id), []).append(candidate_id)
    lines = []
    for family, ids in groups.items():
        ids.sort(key=lambda i: (-objective.fitness(scores[i]), i))
        best = ids[0]
        lines.append(NicheLine(family, len(ids), scores[best], best, book.key_idea(best),
                               ids[:ELITES_SHOWN]))
    lines.sort(key=lambda n: (n.family == UNTAGGED, -objective.fitness(n.best_score), n.family))
    return lines
