"""Search algorithms register themselves here; ``--search NAME`` picks one.

Adding an algorithm is one module::

    class MyOptions(StrictModel):
        width: int = 3

    class MySelector(Selector):
        def add(self, program, rng): ...
        def sample(self, rng): ...

    register_algorithm(AlgorithmSpec("mine", "what it does", MyOptions, MySelector))

and, for a module outside Cambrian, listing it under ``search.plugins`` in the config so it is
imported before the run starts.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from cambrian.config import ConfigError
from cambrian.core.plugins import load_plugins
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


_REGISTRY: dict[str, AlgorithmSpec] = {}
_BUILTINS_LOADED = False


def register_algorithm(spec: AlgorithmSpec) -> AlgorithmSpec:
    _REGISTRY[spec.name] = spec
    return spec


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        importlib.import_module("cambrian.search.algorithms")
        _BUILTINS_LOADED = True


def algorithm_names() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def get_algorithm(name: str) -> AlgorithmSpec:
    _load_builtins()
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, list(_REGISTRY), n=1, cutoff=0.4)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ConfigError(
            f"unknown search algorithm '{name}'{hint} Available: {', '.join(sorted(_REGISTRY))}"
        )
    return _REGISTRY[name]


def validate_options(spec: AlgorithmSpec, options: dict[str, Any]) -> BaseModel:
    try:
        return spec.options.model_validate(options)
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            key = ".".join(str(p) for p in error["loc"])
            if error["type"] == "extra_forbidden":
                close = difflib.get_close_matches(key, list(spec.options.model_fields), n=1, cutoff=0.5)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                valid = ", ".join(spec.options.model_fields) or "(none)"
                lines.append(f"unknown option 'search.options.{key}' for '{spec.name}'{hint} "
                             f"Valid options: {valid}.")
            else:
                lines.append(f"search.options.{key}: {error['msg']}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None


def make_selector(config: Any, initial_id: int = 1) -> Selector:
    """The selector of ``config.search.algorithm`` with its validated options."""
    load_plugins(config.search.plugins)
    spec = get_algorithm(config.search.algorithm)
    options = validate_options(spec, config.search.options)
    context = SelectorContext(
        initial_id=initial_id, num_islands=config.database.num_islands,
        options=options, database=config.database,
    )
    return spec.selector(context)


def make_hooks(config: Any, selector: Selector, services: Any) -> Any | None:
    """The loop hooks of ``config.search.algorithm`` (None when it has none)."""
    spec = get_algorithm(config.search.algorithm)
    if spec.hooks is None:
        return None
    return spec.hooks(selector, services, selector.context.options)
