"""Registries of the loop's swappable parts beside the search algorithm (seed 003's split).

=================== ===================================================== ====================
kind                what it does                                          chosen by
=================== ===================================================== ====================
``context_builder`` the messages for one mutation (``PromptBuilder``)     ``search.context_builder``
``generator``       parent request -> LLM -> applied, checked child       ``search.generator``
                    (``Proposer``)
``evaluator``       program source -> ``EvaluationResult``                ``search.evaluator``
=================== ===================================================== ====================

Each kind has a ``default`` registered by the module that defines it (the composition root
imports those modules). A plugin module (listed under ``search.plugins``) registers more with
:func:`register_component`; ``docs/algorithms.md`` shows one. The factories are called with
keyword arguments:

* ``context_builder(task=, config=)`` with ``config`` the run's ``PromptConfig``;
* ``generator(task=, config=, gateway=, recorder=, filters=, on_reply_refused=)``, see
  :class:`cambrian.mutate.proposer.Proposer`;
* ``evaluator(task=, config=, run_dir=, store=)``: anything with
  ``async evaluate(source, work_dir) -> EvaluationResult`` (and optionally ``prepare()``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cambrian.core.registry import Registry

KINDS = ("context_builder", "generator", "evaluator")
_PLUGIN_HINT = " A plugin module listed under search.plugins can register more."


@dataclass(frozen=True)
class ComponentSpec:
    kind: str
    name: str
    factory: Callable[..., Any]
    description: str = ""


REGISTRIES: dict[str, Registry[ComponentSpec]] = {
    kind: Registry(f"{kind.replace('_', ' ')} (search.{kind})", hint=_PLUGIN_HINT)
    for kind in KINDS}


def _registry(kind: str) -> Registry[ComponentSpec]:
    if kind not in REGISTRIES:
        raise ValueError(f"unknown component kind {kind!r}; one of {', '.join(KINDS)}")
    return REGISTRIES[kind]


def register_component(kind: str, name: str, factory: Callable[..., Any],
                       description: str = "") -> ComponentSpec:
    return _registry(kind).register(name, ComponentSpec(kind, name, factory, description))


def get_component(kind: str, name: str) -> ComponentSpec:
    return _registry(kind).get(name)


def make_component(kind: str, name: str, **arguments: Any) -> Any:
    return get_component(kind, name).factory(**arguments)
