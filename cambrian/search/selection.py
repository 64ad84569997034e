"""Parent selection strategies (seed 000 §3.1, §5): each is a small function of the archive.

Fitness is always "higher is better" here; minimisation tasks are negated before they reach the
archive. Probability functions are kept separate from the draws so the maths can be unit-tested.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class Member:
    """What selection needs to know about an archived program."""

    id: int
    island: int
    fitness: float
    generation: int
    children: int = 0


def _robust_scale(values: np.ndarray) -> float:
    """Median absolute deviation (as a std estimate), falling back to std, then 1.

    Dividing by it makes the sigmoid's pressure independent of the task's score scale.
    """
    median = float(np.median(values))
    mad = float(np.median(np.abs(values - median))) * 1.4826
    if mad > 1e-12:
        return mad
    std = float(np.std(values))
    return std if std > 1e-12 else 1.0


def weighted_probabilities(
    fitness: Sequence[float], children: Sequence[int], lam: float
) -> np.ndarray:
    """Seed 000 §3.1 weighted sampling.

    s_i = sigmoid(lam * (F_i - median(F)) / scale) rewards performance, h_i = 1 / (1 + N_i)
    rewards programs with few offspring, and p_i = s_i * h_i / sum_j s_j * h_j.
    """
    f = np.asarray(fitness, dtype=float)
    n = np.asarray(children, dtype=float)
    if f.size == 0:
        return f
    z = lam * (f - np.median(f)) / _robust_scale(f)
    s = 0.5 * (1.0 + np.tanh(0.5 * z))  # numerically stable sigmoid
    h = 1.0 / (1.0 + n)
    w = s * h
    total = w.sum()
    if not np.isfinite(total) or total <= 0:
        return np.full(f.size, 1.0 / f.size)
    return w / total


def power_law_probabilities(fitness: Sequence[float], alpha: float) -> np.ndarray:
    """Seed 000 §3.1: rank programs by fitness (rank 1 = best), p_i proportional to r_i^-alpha.

    alpha = 0 is uniform sampling; alpha -> infinity is hill climbing.
    """
    f = np.asarray(fitness, dtype=float)
    if f.size == 0:
        return f
    order = np.argsort(-f, kind="stable")
    ranks = np.empty(f.size, dtype=float)
    ranks[order] = np.arange(1, f.size + 1)
    w = ranks ** (-alpha)
    return w / w.sum()


@dataclass
class SelectionContext:
    """Parameters and run facts some strategies need."""

    initial_id: int
    lam: float = 10.0
    alpha: float = 1.0
    num_beams: int = 5
    beam_head: int | None = None  # updated in place by the beam strategy


Strategy = Callable[[Sequence[Member], np.random.Generator, SelectionContext], Member]


def _best(members: Sequence[Member]) -> Member:
    # Ties go to the older program, so hill climbing does not drift between equals.
    return max(members, key=lambda m: (m.fitness, -m.id))


def select_weighted(members: Sequence[Member], rng: np.random.Generator, ctx: SelectionContext) -> Member:
    p = weighted_probabilities([m.fitness for m in members], [m.children for m in members], ctx.lam)
    return members[int(rng.choice(len(members), p=p))]


def select_power_law(members: Sequence[Member], rng: np.random.Generator, ctx: SelectionContext) -> Member:
    p = power_law_probabilities([m.fitness for m in members], ctx.alpha)
    return members[int(rng.choice(len(members), p=p))]


def select_uniform(members: Sequence[Member], rng: np.random.Generator, ctx: SelectionContext) -> Member:
    return members[int(rng.integers(len(members)))]


def select_hill_climb(members: Sequence[Member], rng: np.random.Generator, ctx: SelectionContext) -> Member:
    return _best(members)


def select_best_of_n(members: Sequence[Member], rng: np.random.Generator, ctx: SelectionContext) -> Member:
    """Always the initial program: N independent samples, no feedback (seed 000 §5 baseline)."""
    for m in members:
        if m.id == ctx.initial_id:
            return m
    raise LookupError("best_of_n needs the initial program in the archive")


def select_beam(members: Sequence[Member], rng: np.random.Generator, ctx: SelectionContext) -> Member:
    """Stay on the beam head until it has ``num_beams`` children, then move to the best program
    that still has room (the best overall when every program is saturated)."""
    by_id = {m.id: m for m in members}
    head = by_id.get(ctx.beam_head) if ctx.beam_head is not None else None
    if head is None or head.children >= ctx.num_beams:
        open_members = [m for m in members if m.children < ctx.num_beams]
        head = _best(open_members or members)
        ctx.beam_head = head.id
    return head


STRATEGIES: dict[str, Strategy] = {
    "weighted": select_weighted,
    "power_law": select_power_law,
    "uniform": select_uniform,
    "hill_climb": select_hill_climb,
    "best_of_n": select_best_of_n,
    "beam": select_beam,
}
