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
from typing import Any

from pydantic import BaseModel, ValidationError

from cambrian.config import ConfigError, DatabaseConfig
from cambrian.core.plugins import load_plugins
from cambrian.core.registry import Registry
from cambrian.search.algorithm import Selector, SelectorContext
from cambrian.search.algorithm_spec import AlgorithmSpec
from cambrian.search.algorithms import BUILTIN_ALGORITHMS

__all__ = ["ALGORITHMS", "AlgorithmSpec", "algorithm_names", "get_algorithm",
           "make_hooks", "make_selector", "register_algorithm"]


ALGORITHMS: Registry[AlgorithmSpec] = Registry(
    "search algorithm", hint=" A plugin module listed under search.plugins can register more.")


def register_algorithm(spec: AlgorithmSpec) -> AlgorithmSpec:
    return ALGORITHMS.register(spec.name, spec)


for _builtin in BUILTIN_ALGORITHMS:
    register_algorithm(_builtin)


def algorithm_names() -> list[str]:
    return ALGORITHMS.names()


def get_algorithm(name: str) -> AlgorithmSpec:
    return ALGORITHMS.get(name)


def check_database_keys(spec: AlgorithmSpec, database: DatabaseConfig, *,
                        given_keys: bool = False) -> None:
    """A ``database.*`` setting the chosen algorithm does not read is an error naming the
    algorithms that do: one changed from its default, and with ``given_keys`` (a new run's
    configuration, where what was written is known) one written even at its default value."""
    defaults = DatabaseConfig()
    given = {key for key in DatabaseConfig.model_fields
             if getattr(database, key) != getattr(defaults, key)}
    if given_keys:
        given |= set(database.model_fields_set)
    unused = sorted(given - {"num_islands"} - spec.database_keys)
    if unused:
        readers = sorted(a.name for a in ALGORITHMS if set(unused) <= a.database_keys)
        by = f"only {', '.join(readers)} read" if readers else "no algorithm reads"
        raise ConfigError(
            f"database.{unused[0]}{' (and ' + ', '.join(unused[1:]) + ')' if unused[1:] else ''} "
            f"has no effect with search algorithm '{spec.name}' ({by} it); remove it, or set "
            "search.options of this algorithm instead")


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
    check_database_keys(spec, config.database)
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
