"""A small ask/tell Bayesian optimiser: random points first, then Gaussian-process expected
improvement (seed 001 B.9: 8 random initial points, then GP acquisitions). Given ``start``
points, it asks those before the random ones: the ``tune`` search step passes
:func:`local_steps` around a working program's values, because with a budget of a handful of
evaluations random points drawn from intervals a hundred times wide mostly break the program.

The search runs in the unit cube; each dimension maps it onto its interval, linearly or on a
log scale, and integer dimensions round. The surrogate is scikit-learn's
``GaussianProcessRegressor`` with a Matern-5/2 kernel plus a white-noise term (evaluators can be
noisy). Failed evaluations are told as the worst score seen so far, which steers the search away
from them without letting them dominate the fit. Expected improvement is maximised over random
candidates plus perturbations of the best points found; configurations already evaluated (after
integer rounding) are never proposed twice.

Why not Optuna, which users know: its ask/tell interface and ``enqueue_trial`` could carry the
start points, but the tuning step's budgets are a handful of trials, so what decides is the
order of the first points (the local rings) and never asking a point twice after integer
rounding, while Optuna's GP sampler (``GPSampler``) starts from its own random points and its
default TPE needs tens of trials to model anything. Expressing B.9 exactly would mean
overriding most of the sampler; the part left to a library, the Gaussian process itself, is
scikit-learn's.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from cambrian.core.objective import Objective

RANDOM_CANDIDATES = 2048
LOCAL_CANDIDATES = 256
LOCAL_STEP = 0.1  # relative size of one local step (integers move by at least 1)
# Rings of local steps, nearest first: where 10% moves fall inside the noise of the score or a
# narrow dip, a quarter of the value often reaches the next rise.
LOCAL_RINGS = (LOCAL_STEP, 0.25)


@dataclass(frozen=True)
class Dimension:
    low: float
    high: float
    scale: str = "linear"  # "linear" | "log"
    integer: bool = False

    def from_unit(self, u: float) -> float:
        u = min(1.0, max(0.0, float(u)))
        if self.scale == "log":
            value = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            value = self.low + u * (self.high - self.low)
        if self.integer:
            value = float(min(max(round(value), math.ceil(self.low)), math.floor(self.high)))
        return value

    def to_unit(self, value: float) -> float:
        if self.high == self.low:
            return 0.5
        if self.scale == "log":
            u = (math.log(value) - math.log(self.low)) / (math.log(self.high) - math.log(self.low))
        else:
            u = (value - self.low) / (self.high - self.low)
        return min(1.0, max(0.0, u))


class GaussianProcessSearch:
    def __init__(self, dimensions: list[Dimension], *, objective: Objective, rng_seed: int,
                 initial_random: int = 8, start: list[list[float]] | None = None) -> None:
        if not dimensions:
            raise ValueError("nothing to search: no dimensions")
        self.dimensions = dimensions
        self.objective = objective
        self.initial_random = initial_random
        self._start = list(start or [])
        self.last_phase = ""  # where the last asked point came from: "start", "random" or "gp"
        self._rng = np.random.default_rng(rng_seed)
        self._units: list[np.ndarray] = []
        self._scores: list[float | None] = []
        self._seen: set[tuple[float, ...]] = set()
        self._random_asked = 0

    # ------------------------------------------------------------------ mapping

    def decode(self, unit: np.ndarray) -> list[float]:
        return [d.from_unit(u) for d, u in zip(self.dimensions, unit, strict=True)]

    def encode(self, point: list[float]) -> np.ndarray:
        return np.array([d.to_unit(v) for d, v in zip(self.dimensions, point, strict=True)])

    @staticmethod
    def _key(point: list[float]) -> tuple[float, ...]:
        return tuple(float(f"{v:.12g}") for v in point)

    # ------------------------------------------------------------------ ask / tell

    def tell(self, point: list[float], score: float | None) -> None:
        self._units.append(self.encode(point))
        self._scores.append(None if score is None or not math.isfinite(score) else float(score))
        self._seen.add(self._key(point))

    def ask(self) -> list[float]:
        while self._start:
            point = self._start.pop(0)
            if self._key(point) not in self._seen:
                self.last_phase = "start"
                return point
        if self._random_asked < self.initial_random or not self._can_model():
            self._random_asked += 1
            self.last_phase = "random"
            return self._random_point()
        self.last_phase = "gp"
        return self._acquire()

    def _random_point(self) -> list[float]:
        point = self.decode(self._rng.random(len(self.dimensions)))
        for _ in range(100):
            if self._key(point) not in self._seen:
                break
            point = self.decode(self._rng.random(len(self.dimensions)))
        return point

    def _can_model(self) -> bool:
        successes = {s for s in self._scores if s is not None}
        return len(successes) >= 2

    def _targets(self) -> np.ndarray:
        """Scores as a quantity to maximise, failures imputed with the worst success, and the
        lower tail clipped at the 20th percentile: a few disastrous points would otherwise
        flatten the surrogate everywhere that matters."""
        signed = [self.objective.fitness(s) for s in self._scores]
        worst = min(v for v in signed if v is not None)
        targets = np.array([worst if v is None else v for v in signed])
        return np.maximum(targets, np.quantile(targets, 0.2))

    def _acquire(self) -> list[float]:
        # Imported here: scikit-learn takes a second to load, and only the GP phase needs it.
        from scipy.stats import norm
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

        x = np.vstack(self._units)
        y = self._targets()
        dims = len(self.dimensions)
        kernel = (ConstantKernel(1.0, (1e-3, 1e3))
                  * Matern(length_scale=np.full(dims, 0.3), length_scale_bounds=(1e-2, 1e1),
                           nu=2.5)
                  + WhiteKernel(1e-5, (1e-9, 1e-1)))
        model = GaussianProcessRegressor(kernel=kernel, normalize_y=True, n_restarts_optimizer=1,
                                         random_state=int(self._rng.integers(2**31)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", UserWarning)
            model.fit(x, y)
        candidates = self._candidates(x, y)
        mean, std = model.predict(candidates, return_std=True)
        best = float(np.max(y))
        xi = 0.01 * (float(np.std(y)) or 1.0)
        improvement = mean - best - xi
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(std > 1e-12, improvement / std, 0.0)
        expected = np.where(std > 1e-12, improvement * norm.cdf(z) + std * norm.pdf(z), 0.0)
        for index in np.argsort(-expected, kind="stable"):
            point = self.decode(candidates[index])
            if self._key(point) not in self._seen:
                return point
        return self._random_point()

    def _candidates(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        dims = x.shape[1]
        uniform = self._rng.random((RANDOM_CANDIDATES, dims))
        top = x[np.argsort(-y, kind="stable")[:3]]
        local = []
        for spread in (0.03, 0.1, 0.25):
            centres = top[self._rng.integers(len(top), size=LOCAL_CANDIDATES // 3)]
            local.append(np.clip(centres + self._rng.normal(0, spread, centres.shape), 0, 1))
        return np.vstack([uniform, *local])


def local_steps(dimensions: list[Dimension], values: list[float],
                step: float = LOCAL_STEP) -> list[list[float]]:
    """One-knob-at-a-time moves from ``values``: each knob up then down by ``step`` of its value
    (at least 1 for integers), kept inside its interval; moves that change nothing are left out."""
    points: list[list[float]] = []
    for index, (dimension, value) in enumerate(zip(dimensions, values, strict=True)):
        for sign in (1, -1):
            delta = abs(value) * step or step
            if dimension.integer:
                delta = max(1.0, round(delta))
            moved = min(dimension.high, max(dimension.low, value + sign * delta))
            if dimension.integer:
                moved = float(round(moved))
            if moved != value:
                point = list(values)
                point[index] = moved
                points.append(point)
    return points


def local_rings(dimensions: list[Dimension], values: list[float],
                steps: tuple[float, ...] = LOCAL_RINGS) -> list[list[float]]:
    """:func:`local_steps` for each relative step in ``steps``, nearest ring first; a point
    that an earlier ring already holds is not repeated."""
    points: list[list[float]] = []
    for step in steps:
        points.extend(p for p in local_steps(dimensions, values, step) if p not in points)
    return points
