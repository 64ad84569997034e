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

* ``context_builder(task=, config=)`` with ``config`` the run's ``PromptConfig``: a
  :class:`cambrian.mutate.prompts.ContextBuilder` (default ``PromptBuilder``);
* ``generator(task=, config=, gateway=, recorder=, filters=, on_reply_refused=)``: a
  :class:`cambrian.mutate.proposer.Generator` (default ``Proposer``);
* ``evaluator(task=, config=, run_dir=, store=)``: anything with
  ``async evaluate(source, work_dir) -> EvaluationResult`` (and optionally ``prepare()``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cambrian.core.errors import ConfigError
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


def make_component(kind: str, name: str, contract: type | None = None, **arguments: Any) -> Any:
    """The component ``name`` of ``kind``, made with ``arguments``; with ``contract`` (a
    runtime-checkable Protocol) one that lacks a member of it is a ConfigError naming the
    setting and the members missing, before the run starts."""
    component = get_component(kind, name).factory(**arguments)
    if contract is not None and not isinstance(component, contract):
        members = [*(n for n, v in vars(contract).items() if callable(v)),
                   *getattr(contract, "__annotations__", {})]
        missing = sorted({m for m in members
                          if not m.startswith("_") and not hasattr(component, m)})
        raise ConfigError(f"search.{kind} '{name}' makes a {type(component).__name__}, which "
                          f"lacks {', '.join(missing) or 'a member'} of a "
                          f"{contract.__name__}")
    return component
