"""Reading and layering configuration: YAML files, ``--set`` overrides, ``${VAR}`` references
(``env_vars.py``), strict validation whose errors name the closest valid key."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from cambrian.config.env_vars import mark_sources, pin, restore, substitute
from cambrian.config.sections import RunConfig
from cambrian.core.errors import ConfigError
from cambrian.core.plugins import load_plugins


def _valid_keys_at(model: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """Field names of the (nested) model found by following ``path`` from ``model``."""
    current: Any = model
    for part in path:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if hasattr(current, "model_fields") else None
        if field is None:
            return []
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        candidates = [annotation, *args]
        current = next(
            (c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None
        )
        if current is None:
            return []
    return list(current.model_fields) if current is not None else []


def _describe(error: dict[str, Any]) -> str:
    loc = tuple(error["loc"])
    dotted = ".".join(str(p) for p in loc) or "(top level)"
    if error["type"] == "extra_forbidden":
        valid = _valid_keys_at(RunConfig, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), valid, n=1, cutoff=0.5)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        options = f" Valid keys here: {', '.join(valid)}." if valid else ""
        return f"unknown config key '{dotted}'{hint}{options}"
    return f"{dotted}: {error['msg']}"


def validate_config(data: dict[str, Any]) -> RunConfig:
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        lines = [_describe(e) for e in exc.errors()]
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines)) from None


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_bytes().decode("utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): a "
                          "config file is YAML") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections, got {type(data).__name__}")
    return mark_sources(data, str(path))


def parse_override(text: str) -> dict[str, Any]:
    """``evolution.generations=30`` -> ``{"evolution": {"generations": 30}}`` (YAML-typed value)."""
    if "=" not in text:
        raise ConfigError(f"override '{text}' must look like section.key=value")
    dotted, raw = text.split("=", 1)
    parts = [p for p in dotted.strip().split(".") if p]
    if not parts:
        raise ConfigError(f"override '{text}' has an empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    result: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        result = {part: result}
    return mark_sources(result, "--set")


def build_config(
    layers: list[dict[str, Any]],
    overrides: list[str] | None = None,
) -> RunConfig:
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, layer)
    for text in overrides or []:
        merged = deep_merge(merged, parse_override(text))
    plugins = (merged.get("search") or {}).get("plugins") if isinstance(merged.get("search"),
                                                                         dict) else None
    if isinstance(plugins, list):  # they may register names the config uses (a language...)
        load_plugins([str(p) for p in plugins])
    merged, templates = substitute(merged)
    config = validate_config(merged)
    config._env_templates = pin(config.model_dump(mode="json"), templates)
    return config


def stored_form(config: RunConfig) -> dict[str, Any]:
    """The configuration as a run stores, prints and exports it: its values, but each one
    written as ``${VAR}`` kept as written (the variable's value never reaches the store)."""
    return restore(config.model_dump(mode="json"), config._env_templates)
