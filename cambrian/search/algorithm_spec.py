"""What a search algorithm is to the loop: a name, a description, its options, the selector
it builds, optional loop hooks and the ``database.*`` keys it reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from cambrian.search.algorithm import Selector, SelectorContext


@dataclass(frozen=True)
class AlgorithmSpec:
    name: str
    description: str
    options: type[BaseModel]
    selector: Callable[[SelectorContext], Selector]
    # Optional loop hooks (LLM-driven parts of an algorithm): called as
    # hooks(selector, services, options) -> cambrian.search.hooks.AlgorithmHooks.
    hooks: Callable[..., Any] | None = None
    # The ``database.*`` settings it reads besides ``num_islands`` (the shared archive section
    # is shinka's); setting another one for this algorithm is an error, not silently ignored.
    database_keys: frozenset[str] = frozenset()
    # Loop parts the algorithm turns on whatever their own section says: "phases",
    # "reflection", "niches" (their settings still come from those sections).
    features: frozenset[str] = frozenset()
