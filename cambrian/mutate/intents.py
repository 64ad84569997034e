"""The registry of mutation intents (`intent.py` says what one is). It registers the intents
Cambrian ships (`builtin_intents.py`, the improvement step in `step/intent.py`); a plugin adds
one with `register_intent` and lists its name in `mutation.types`."""

from __future__ import annotations

from collections.abc import Iterable

from cambrian.core.errors import ConfigError
from cambrian.core.registry import Registry, UnknownName
from cambrian.mutate.builtin_intents import BUILTIN_INTENTS
from cambrian.mutate.intent import MutationIntent
from cambrian.mutate.step.intent import IMPROVE_STEP

INTENTS: Registry[MutationIntent] = Registry(
    "mutation intent", hint=" A plugin adds one with cambrian.mutate.intents.register_intent.")


def register_intent(intent: MutationIntent) -> MutationIntent:
    return INTENTS.register(intent.name, intent)


for _intent in (*BUILTIN_INTENTS, IMPROVE_STEP):
    register_intent(_intent)


def intent_instruction(name: str) -> str:
    return INTENTS.get(name).instruction


def check_intent_names(key: str, names: Iterable[str]) -> None:
    """Raises ``ConfigError`` naming the config ``key`` when one of ``names`` is no registered
    intent (checked before a run starts, plugins' intents included)."""
    for name in names:
        try:
            INTENTS.get(name)
        except UnknownName as exc:
            raise ConfigError(f"{key}: {exc}") from None
