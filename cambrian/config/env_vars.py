"""``${VAR}`` and ``${VAR:-default}`` in configuration values, as OpenEvolve's config files
write them: a string value naming an environment variable gets its value when the
configuration is built, while the run keeps the reference (what it stores, prints or exports
is the ``${VAR}`` form, never the value).

A reference without a default whose variable is unset is a ConfigError naming the variable and
the file it is written in. ``${VAR:-default}`` takes the default when the variable is unset or
empty (as a shell does); ``$${`` writes a literal ``${``. Only string values are substituted,
never keys; a value that is one reference alone is validated like any string the YAML held
("30" for an integer setting is 30); such a number or flag is stored as its value, a text
setting as its reference.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import yaml

from cambrian.core.errors import ConfigError

REFERENCE = re.compile(r"\$(\$)?\{([^}]*)\}")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Path_ = tuple[str | int, ...]


class SourcedText(str):
    """A string value of a config file that holds a ``${...}``, remembering the file (so an
    unset variable's error can name it, whatever layer the value ends up in)."""

    source: str

    def __new__(cls, text: str, source: str) -> SourcedText:
        made = super().__new__(cls, text)
        made.source = source
        return made


# Written back as the plain text it is (a layer read from a file may be dumped again:
# `cambrian config translate`, a peer's layer).
yaml.SafeDumper.add_representer(SourcedText, lambda dumper, text: dumper.represent_str(str(text)))


def has_reference(text: str) -> bool:
    return any(match.group(1) is None for match in REFERENCE.finditer(text))


def mark_sources(data: Any, source: str) -> Any:
    """``data`` (a config file's YAML) with every string holding a reference marked with
    ``source``."""
    if isinstance(data, dict):
        return {key: mark_sources(value, source) for key, value in data.items()}
    if isinstance(data, list):
        return [mark_sources(value, source) for value in data]
    if isinstance(data, str) and has_reference(data):
        return SourcedText(data, source)
    return data


def _where(text: str) -> str:
    source = getattr(text, "source", None)
    return f" in {source}" if source else " in the configuration"


def expand(text: str, environ: Mapping[str, str], key: str = "") -> str:
    """``text`` with its references replaced from ``environ``."""

    def value(match: re.Match[str]) -> str:
        if match.group(1) is not None:  # $${...}: a literal ${...}
            return "${" + match.group(2) + "}"
        inner = match.group(2)
        name, has_default, default = inner.partition(":-")
        if not NAME.match(name):
            raise ConfigError(f"'${{{inner}}}'{_where(text)}{' at ' + key if key else ''} is "
                              "not a variable reference: write ${NAME} or ${NAME:-default} "
                              "(and $${ for a literal ${)")
        found = environ.get(name)
        if has_default and not found:
            return default
        if found is None:
            raise ConfigError(f"environment variable {name} is not set, but{_where(text)} "
                              f"{key or 'a value'} refers to it as ${{{name}}}: set it, or "
                              f"write ${{{name}:-default}}")
        return found

    return REFERENCE.sub(value, text)


def substitute(data: Any, environ: Mapping[str, str] | None = None,
               path: Path_ = ()) -> tuple[Any, dict[Path_, str]]:
    """``data`` with every reference replaced, and the original text of each replaced value
    by its path (keys, and list indices)."""
    environ = os.environ if environ is None else environ
    templates: dict[Path_, str] = {}
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out[key], inner = substitute(value, environ, (*path, key))
            templates.update(inner)
        return out, templates
    if isinstance(data, list):
        items = []
        for index, value in enumerate(data):
            item, inner = substitute(value, environ, (*path, index))
            items.append(item)
            templates.update(inner)
        return items, templates
    if isinstance(data, str) and "${" in data:
        dotted = ".".join(str(part) for part in path)
        expanded = expand(data, environ, dotted)
        if expanded != data or has_reference(data):
            templates[path] = str(data)
        return expanded, templates
    return data, templates


MISSING = object()  # value_at's answer for a path the data does not have
_MISSING = MISSING


def value_at(dumped: Any, path: Path_) -> Any:
    node = dumped
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return _MISSING
    return node


Pinned = dict[Path_, tuple[str, Any]]


def pin(dumped: dict[str, Any], templates: Mapping[Path_, str]) -> Pinned:
    """Each template that gave a text setting, with the text it gave, as the validated
    configuration dumps it. A number or a flag is stored as its value (no secret, and what
    reads a stored configuration, such as the web UI, finds it typed)."""
    return {path: (text, value_at(dumped, path)) for path, text in templates.items()
            if isinstance(value_at(dumped, path), str)}


def restore(dumped: dict[str, Any], pinned: Pinned) -> dict[str, Any]:
    """A dumped configuration with each substituted value put back as it was written, while
    it still holds the value the reference gave (a value changed since, e.g. a budget raised
    from the web UI, is stored as it now is)."""
    for path, (text, value) in pinned.items():
        if value_at(dumped, path) != value:
            continue
        parent = value_at(dumped, path[:-1])
        parent[path[-1]] = text
    return dumped


__all__ = ["Pinned", "SourcedText", "expand", "has_reference", "mark_sources", "pin", "restore",
           "substitute", "value_at"]
