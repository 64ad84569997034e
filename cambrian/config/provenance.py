"""Where each value of an effective configuration came from: the layering of ``loading.py``
run again with a label per layer (``cambrian config show``).

A setting's source is the last layer that wrote it, or a mapping or list holding it (a list is
one value: ``llm.models`` replaced whole); a setting no layer wrote is the built-in default,
or "derived" where the configuration's own rules changed it (a default turned off for a
missing extra, a value computed from others).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cambrian.config.env_vars import MISSING, value_at
from cambrian.config.loading import parse_override, stored_form
from cambrian.config.sections import RunConfig

Key = tuple[str | int, ...]
DEFAULT = "default"
DERIVED = "derived"


@dataclass(frozen=True)
class Layer:
    label: str  # "task config (task/config.yaml)", "file run.yaml", "--set a.b=1"
    data: Mapping[str, Any]


@dataclass(frozen=True)
class Setting:
    key: str  # dotted
    value: Any  # as the run stores it (a ${VAR} value as written)
    source: str  # a layer's label, DEFAULT or DERIVED
    from_environment: bool  # written as ${VAR} and substituted


def override_layers(overrides: list[str]) -> list[Layer]:
    return [Layer(f"--set {text}", parse_override(text)) for text in overrides]


def written_paths(data: Any, path: Key = ()) -> Iterator[Key]:
    """Every path a layer writes: its leaves, lists whole (an empty mapping writes nothing:
    merged, it changes nothing)."""
    if isinstance(data, Mapping):
        for key, value in data.items():
            yield from written_paths(value, (*path, str(key)))
    else:
        yield path


def leaves(data: Any, path: Key = ()) -> Iterator[tuple[Key, Any]]:
    """The settings of a dumped configuration: mappings opened, and lists of mappings (the
    models), each item by its index; other lists and scalars as they are."""
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from leaves(value, (*path, key))
    elif isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        for index, item in enumerate(data):
            yield from leaves(item, (*path, index))
    else:
        yield path, data


def dotted(path: Key) -> str:
    """``("llm", "models", 0, "model")`` -> ``llm.models[0].model``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _writer(path: Key, writers: dict[Key, Layer]) -> Layer | None:
    """The last layer that wrote ``path``, or a list holding it with this key in the item it
    wrote (a model's key the file left out is the model's default)."""
    for length in range(len(path), 0, -1):
        layer = writers.get(path[:length])
        if layer is not None:
            inside = value_at(dict(layer.data), path)
            return layer if length == len(path) or inside is not MISSING else None
    return None


def provenance(config: RunConfig, layers: list[Layer]) -> list[Setting]:
    """Each setting of ``config`` (the effective configuration ``layers`` built) with its
    source, in the configuration's order."""
    writers: dict[Key, Layer] = {}
    for layer in layers:
        for path in written_paths(dict(layer.data)):
            # a layer writing a mapping or list replaces what earlier layers wrote inside it
            for older in [p for p in writers if p[:len(path)] == path]:
                del writers[older]
            writers[path] = layer
    defaults = RunConfig().model_dump(mode="json")
    dumped = config.model_dump(mode="json")
    shown = stored_form(config)
    settings = []
    for path, value in leaves(dumped):
        layer = _writer(path, writers)
        if layer is not None:
            source = layer.label
        else:
            default = value_at(defaults, path)
            if default is MISSING and isinstance(path[-1], str):  # an item of a list: its model
                default = _item_default(config, path)
            source = DEFAULT if default == value else DERIVED
        written = value_at(shown, path)
        settings.append(Setting(dotted(path), written, source, written != value))
    return settings


def _item_default(config: RunConfig, path: Key) -> Any:
    """The default of a key of a list item (``llm.models[1].weight``): its model's."""
    item: Any = config
    for part in path[:-1]:
        item = item[part] if isinstance(part, int) else getattr(item, part, None)
    fields = getattr(type(item), "model_fields", {})
    field = fields.get(path[-1])
    if field is None:
        return MISSING
    default = field.get_default(call_default_factory=True)
    return default.model_dump(mode="json") if hasattr(default, "model_dump") else default


__all__ = ["DEFAULT", "DERIVED", "Layer", "Setting", "dotted", "override_layers", "provenance"]
