"""Registries for the loop's swappable parts (seed 003's split): the search algorithm's selector
and loop hooks live in :mod:`cambrian.search.registry`; the three other parts live here.

=================== ===================================================== ====================
kind                what it does                                          chosen by
=================== ===================================================== ====================
``context_builder`` the messages for one mutation (``PromptBuilder``)     ``search.context_builder``
``generator``       parent request -> LLM -> applied, checked child       ``search.generator``
                    (``Proposer``)
``evaluator``       program source -> ``EvaluationResult``                ``search.evaluator``
=================== ===================================================== ====================

Each kind has a ``default`` registered by the module that defines it. A plugin module (listed
under ``search.plugins``) registers more with :func:`register_component`; ``docs/algorithms.md``
shows one. The factories are called with keyword arguments:

* ``context_builder(task=, config=)`` with ``config`` the run's ``PromptConfig``;
* ``generator(task=, config=, store=, ensemble=, **proposer_options)``, the options being those
  of :class:`cambrian.mutate.proposer.Proposer` (budget check, novelty filter...);
* ``evaluator(task=, config=, run_dir=, store=)``: anything with
  ``async evaluate(source, work_dir) -> EvaluationResult`` (and optionally ``prepare()``).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cambrian.config import ConfigError

KINDS = ("context_builder", "generator", "evaluator")
_DEFINED_IN = {"context_builder": "cambrian.mutate.prompts",
               "generator": "cambrian.mutate.proposer",
               "evaluator": "cambrian.evaluate.factory"}


@dataclass(frozen=True)
class ComponentSpec:
    kind: str
    name: str
    factory: Callable[..., Any]
    description: str = ""


_REGISTRY: dict[str, dict[str, ComponentSpec]] = {kind: {} for kind in KINDS}


def register_component(kind: str, name: str, factory: Callable[..., Any],
                       description: str = "") -> ComponentSpec:
    if kind not in _REGISTRY:
        raise ValueError(f"unknown component kind {kind!r}; one of {', '.join(KINDS)}")
    spec = ComponentSpec(kind, name, factory, description)
    _REGISTRY[kind][name] = spec
    return spec


def component_names(kind: str) -> list[str]:
    importlib.import_module(_DEFINED_IN[kind])
    return sorted(_REGISTRY[kind])


def get_component(kind: str, name: str) -> ComponentSpec:
    importlib.import_module(_DEFINED_IN[kind])  # registers the default
    known = _REGISTRY[kind]
    if name not in known:
        close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.4)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise ConfigError(f"unknown {kind.replace('_', ' ')} '{name}' (search.{kind}){hint} "
                          f"Available: {', '.join(sorted(known))}. A plugin module listed "
                          "under search.plugins can register more.")
    return known[name]


def make_component(kind: str, name: str, **arguments: Any) -> Any:
    return get_component(kind, name).factory(**arguments)
