"""A MAP-Elites grid over declared feature dimensions with FIXED bin ranges.

Each dimension names a feature (``code_length``, ``score`` or a public metric), a range
``[lo, hi]`` and a bin count. Values outside the range land in the edge bins. Unlike a grid whose
ranges follow the running min and max, a program's cell never changes during a run, so the
grid's meaning is stable and a resume rebuilds exactly the same cells.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field, model_validator

from cambrian.config import StrictModel
from cambrian.search.algorithm import ProgramRecord

Cell = tuple[int, ...]


class FeatureDimension(StrictModel):
    """One axis of the grid."""

    # "code_length" (characters of source), "score" (the program's fitness: the task score,
    # negated for minimisation tasks) or the name of any numeric public metric.
    name: str
    range: tuple[float, float]  # [lo, hi], fixed for the whole run
    bins: int = Field(10, ge=1)

    @model_validator(mode="after")
    def _check_range(self) -> FeatureDimension:
        lo, hi = self.range
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise ValueError(f"feature '{self.name}': range must be finite with lo < hi, "
                             f"got [{lo}, {hi}]")
        return self


def feature_value(program: ProgramRecord, name: str) -> float | None:
    """The program's value on one feature; None when it does not report that feature."""
    if name == "code_length":
        return float(program.code_length)
    if name == "score":
        return program.fitness
    value: Any = program.metrics.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def bin_index(value: float, lo: float, hi: float, bins: int) -> int:
    """The bin of ``value`` in ``bins`` equal bins over [lo, hi]; outside values clamp."""
    if value <= lo:
        return 0
    if value >= hi:
        return bins - 1
    return min(bins - 1, int((value - lo) / (hi - lo) * bins))


class FeatureGrid:
    """Cell -> the best program whose features fall in that cell."""

    def __init__(self, dimensions: list[FeatureDimension]) -> None:
        self.dimensions = dimensions
        self._cells: dict[Cell, ProgramRecord] = {}

    def cell_of(self, program: ProgramRecord) -> Cell | None:
        """None when the program lacks one of the features (it then stays out of the grid)."""
        cell: list[int] = []
        for dim in self.dimensions:
            value = feature_value(program, dim.name)
            if value is None:
                return None
            cell.append(bin_index(value, dim.range[0], dim.range[1], dim.bins))
        return tuple(cell)

    def place(self, program: ProgramRecord) -> bool:
        """Offer ``program`` to its cell; it stays only if the cell is empty or it is strictly
        better than the occupant (ties keep the incumbent). Returns whether it stayed."""
        assert program.fitness is not None
        cell = self.cell_of(program)
        if cell is None:
            return False
        occupant = self._cells.get(cell)
        if occupant is not None:
            if occupant.id == program.id:
                return True
            if program.fitness <= occupant.fitness:  # type: ignore[operator]
                return False
        self._cells[cell] = program
        return True

    def remove(self, program_id: int) -> None:
        for cell, occupant in list(self._cells.items()):
            if occupant.id == program_id:
                del self._cells[cell]

    def occupant(self, cell: Cell) -> ProgramRecord | None:
        return self._cells.get(cell)

    def is_elite(self, program_id: int) -> bool:
        return any(p.id == program_id for p in self._cells.values())

    def elites(self) -> list[ProgramRecord]:
        return [self._cells[cell] for cell in sorted(self._cells)]

    def cells(self) -> dict[Cell, int]:
        return {cell: self._cells[cell].id for cell in sorted(self._cells)}

    def __len__(self) -> int:
        return len(self._cells)
