"""The strategy families a tag may name: a small vocabulary that grows (seed 002 §10.4).

A model's free-text family ("Simulated-Annealing approach", "SA", "hill climbing") is normalised:
lower-cased, punctuation and filler words ("algorithm", "approach"...) dropped, synonyms mapped
to one family ("sa" -> "simulated annealing", "hill climbing" -> "local search"); a text naming
two known families is a "hybrid". A name the vocabulary does not know is *proposed*: its tags
read "other" until the name has been given ``promote_after`` times, or the model insisted on it
once (it repeated it after being shown the vocabulary), and from then on it is a family like
the built-in ones, for the earlier tags too. The vocabulary is a pure function of the sequence
of raw names, so a resumed run rebuilds it from the stored tags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

OTHER = "other"
HYBRID = "hybrid"
UNTAGGED = "untagged"  # a correct program no tag has reached yet (not a family of the vocabulary)

# family -> its synonyms (normalised text); every family is also its own synonym.
BASE_FAMILIES: dict[str, tuple[str, ...]] = {
    "greedy": ("greedy construction", "greedy heuristic", "constructive", "construction",
               "constructive heuristic", "nearest neighbour", "nearest neighbor"),
    "beam search": ("beam",),
    "simulated annealing": ("sa", "annealing", "anneal", "simulated anneal"),
    "local search": ("ls", "hill climbing", "hill climb", "hillclimbing", "2 opt", "2opt",
                     "3 opt", "iterated local search", "local improvement", "local optimization",
                     "local optimisation", "coordinate descent", "gradient descent"),
    "dynamic programming": ("dp", "memoization", "memoisation", "dynamic program"),
    "exhaustive search": ("brute force", "exhaustive", "enumeration", "backtracking",
                          "complete search", "bruteforce"),
    "random search": ("random", "random sampling", "monte carlo", "random restart",
                      "random restarts", "sampling", "multi start", "multistart"),
    "evolutionary": ("genetic", "genetic algorithm", "ga", "evolutionary algorithm",
                     "evolution strategy", "differential evolution", "cma es"),
    "mathematical": ("closed form", "analytic", "analytical", "formula", "math",
                     "mathematical construction", "direct computation"),
    HYBRID: ("combination", "mixed", "combined"),
    OTHER: ("none", "unknown", "n a", "na", "misc", "miscellaneous"),
}
_FILLER = frozenset({"algorithm", "algorithms", "approach", "method", "methods", "strategy",
                     "technique", "based", "using", "the", "a", "an", "with", "style", "solution",
                     "solver", "heuristic", "heuristics", "search"})
_KEEP_SEARCH = frozenset({"beam search", "local search", "exhaustive search", "random search",
                         "tabu search"})
MAX_FAMILY_WORDS = 3


def normalise_text(text: str) -> str:
    """Lower case, separators and punctuation to spaces, whitespace collapsed."""
    lowered = text.strip().lower().replace("_", " ").replace("-", " ").replace("/", " ")
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", lowered).split())


def _drop_filler(text: str) -> str:
    words = text.split()
    kept = [w for i, w in enumerate(words)
            if w not in _FILLER or (w == "search" and " ".join(words[max(0, i - 1):i + 1])
                                    in _KEEP_SEARCH)]
    return " ".join(kept)


@dataclass
class StrategyVocabulary:
    """Families known now, the synonyms that map to them, and the names proposed so far."""

    promote_after: int = 2
    families: dict[str, tuple[str, ...]] = field(
        default_factory=lambda: {k: v for k, v in BASE_FAMILIES.items()})
    proposed: dict[str, int] = field(default_factory=dict)  # unknown name -> times given

    def __post_init__(self) -> None:
        self._synonyms = {}
        for family, synonyms in self.families.items():
            self._learn(family, synonyms)

    def _learn(self, family: str, synonyms: tuple[str, ...] = ()) -> None:
        for name in (family, *synonyms):
            self._synonyms[normalise_text(name)] = family

    def known(self, family: str) -> bool:
        return family in self.families

    def names(self) -> list[str]:
        """The families a prompt offers (other last)."""
        return [f for f in self.families if f != OTHER] + [OTHER]

    def canonical(self, raw: str) -> str | None:
        """The family ``raw`` names, or None when it names none the vocabulary knows yet."""
        text = normalise_text(raw)
        if not text:
            return OTHER
        for candidate in (text, _drop_filler(text)):
            if candidate in self._synonyms:
                return self._synonyms[candidate]
        found = {family for name, family in self._synonyms.items()
                 if re.search(rf"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])", text)
                 and len(name) > 2}
        found.discard(OTHER)
        if len(found) == 1:
            return found.pop()
        if len(found) > 1:
            return HYBRID
        return None

    def proposal(self, raw: str) -> str:
        """The name an unknown family would join the vocabulary as (at most three words)."""
        text = _drop_filler(normalise_text(raw)) or normalise_text(raw)
        return " ".join(text.split()[:MAX_FAMILY_WORDS])

    def observe(self, raw: str, *, insisted: bool = False) -> str:
        """Take in one raw family given to a program; the family it resolves to now (an
        unknown name stays "other" until promoted)."""
        family = self.canonical(raw)
        if family is not None:
            return family
        name = self.proposal(raw)
        if not name:
            return OTHER
        self.proposed[name] = self.proposed.get(name, 0) + 1
        if insisted or self.proposed[name] >= self.promote_after:
            self.families[name] = ()
            self._learn(name)
            del self.proposed[name]
            return name
        return OTHER

    def resolve(self, raw: str) -> str:
        """The family ``raw`` resolves to now, without counting it (a promoted name resolves
        to itself, an unknown one to "other")."""
        return self.canonical(raw) or OTHER
