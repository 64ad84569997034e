"""What tells two programs apart (seed 004 §10.4 "Diversity Distance Function"):

    d(a, b) = w1 * d_strategy + w2 * d_behaviour + w3 * d_structure

- ``d_strategy``: 0 when both programs are tagged with the same family, 1 when not;
- ``d_behaviour``: the cosine distance of what they do: their per-case scores (``extra
  ["cases"]``) when the task reports them, else their numeric public metrics;
- ``d_structure``: how much of their code differs (1 - difflib's ratio over their lines; from
  the code lengths when the sources are not at hand).

Each term lies in [0, 1]. A term that cannot be computed for a pair (an untagged program, a task
reporting neither cases nor metrics) is left out and the remaining weights re-normalised, so the
distance stays in [0, 1].
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from typing import Any

from cambrian.config.niches import DistanceWeights
from cambrian.meta.strategy_vocabulary import UNTAGGED
from cambrian.search.algorithm import ProgramRecord

FamilyOf = Callable[[int], str]
SourceOf = Callable[[int], str | None]


def behaviour_vector(program: ProgramRecord) -> dict[str, float]:
    """Per-case scores, else the finite numeric public metrics (booleans are not numbers)."""
    if program.case_scores:
        return {f"case:{k}": float(v) for k, v in program.case_scores.items()
                if math.isfinite(float(v))}
    vector: dict[str, float] = {}
    for key, value in program.metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(float(value)):
            vector[f"metric:{key}"] = float(value)
    return vector


def cosine_distance(a: Mapping[str, float], b: Mapping[str, float]) -> float | None:
    """1 - cosine similarity over the union of keys (a missing key is 0), clamped to [0, 1];
    None when either vector is empty."""
    if not a or not b:
        return None
    keys = sorted(set(a) | set(b))
    dot = sum(a.get(k, 0.0) * b.get(k, 0.0) for k in keys)
    norm_a = math.sqrt(sum(v * v for v in a.values()))
    norm_b = math.sqrt(sum(v * v for v in b.values()))
    if norm_a == 0.0 or norm_b == 0.0:
        return 0.0 if norm_a == norm_b else 1.0
    return min(1.0, max(0.0, 1.0 - dot / (norm_a * norm_b)))


def structural_distance(source_a: str | None, source_b: str | None,
                        length_a: int = 0, length_b: int = 0) -> float:
    """1 - difflib's similarity ratio of the two sources' lines; without both sources, the
    relative difference of their lengths."""
    if source_a is not None and source_b is not None:
        if source_a == source_b:
            return 0.0
        matcher = difflib.SequenceMatcher(None, source_a.splitlines(), source_b.splitlines(),
                                          autojunk=False)
        return 1.0 - matcher.ratio()
    longest = max(length_a, length_b)
    return abs(length_a - length_b) / longest if longest else 0.0


def strategy_distance(family_a: str, family_b: str) -> float | None:
    """0 for one family, 1 for two; None when either program is untagged."""
    if UNTAGGED in (family_a, family_b):
        return None
    return 0.0 if family_a == family_b else 1.0


def combine(terms: Mapping[str, float | None], weights: DistanceWeights) -> float:
    """The weighted mean of the terms that could be computed (0 when none could)."""
    weight_of: dict[str, float] = {"strategy": weights.strategy, "behaviour": weights.behaviour,
                                   "structure": weights.structure}
    used = {name: value for name, value in terms.items()
            if value is not None and weight_of[name] > 0}
    total = sum(weight_of[name] for name in used)
    if total <= 0:
        return 0.0
    return sum(weight_of[name] * value for name, value in used.items()) / total


class DiversityDistance:
    """d(a, b) for the programs of one run; the structural term (the costly one) is cached
    per pair, since a program's code never changes."""

    def __init__(self, weights: DistanceWeights, family_of: FamilyOf,
                 source_of: SourceOf | None = None) -> None:
        self.weights = weights
        self.family_of = family_of
        self.source_of = source_of
        self._structure: dict[tuple[int, int], float] = {}

    def terms(self, a: ProgramRecord, b: ProgramRecord) -> dict[str, float | None]:
        return {"strategy": strategy_distance(self.family_of(a.id), self.family_of(b.id)),
                "behaviour": cosine_distance(behaviour_vector(a), behaviour_vector(b)),
                "structure": self.structure(a, b) if self.weights.structure > 0 else None}

    def structure(self, a: ProgramRecord, b: ProgramRecord) -> float:
        key = (min(a.id, b.id), max(a.id, b.id))
        if key not in self._structure:
            source_a = self.source_of(a.id) if self.source_of else None
            source_b = self.source_of(b.id) if self.source_of else None
            self._structure[key] = structural_distance(source_a, source_b, a.code_length,
                                                       b.code_length)
        return self._structure[key]

    def __call__(self, a: ProgramRecord, b: ProgramRecord) -> float:
        if a.id == b.id:
            return 0.0
        return combine(self.terms(a, b), self.weights)

    def describe(self, a: ProgramRecord, b: ProgramRecord) -> dict[str, Any]:
        terms = self.terms(a, b)
        return {**terms, "distance": combine(terms, self.weights)}
