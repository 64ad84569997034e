"""Hand-built programs and tags for the niche tests."""

from __future__ import annotations

from typing import Any

from cambrian.config.niches import NichesConfig
from cambrian.meta.strategy_tags import Tag, TagBook
from cambrian.search.algorithm import ProgramRecord


def program(pid: int, fitness: float | None, *, parent: int | None = None,
            generation: int | None = None, cases: dict[str, float] | None = None,
            children: int = 0, **extra: Any) -> ProgramRecord:
    return ProgramRecord(id=pid, parent_id=parent, island=0,
                         generation=pid if generation is None else generation,
                         correct=fitness is not None, fitness=fitness,
                         case_scores=cases or {}, children=children, **extra)


def book_of(families: dict[int, str]) -> TagBook:
    book = TagBook()
    for pid, family in families.items():
        book.add(Tag(pid, family, f"idea of {pid}"))
    return book


def settings(**values: Any) -> NichesConfig:
    return NichesConfig(**values)
