"""Reply formats by name. A module defining a format registers it here; the built-in ones
(``diff``, ``full``, ``function``) are loaded on first lookup, a plugin's when its module is
imported (``search.plugins``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cambrian.core.registry import Registry

if TYPE_CHECKING:
    from cambrian.mutate.formats.base import ReplyFormat

BUILTIN_MODULES = ("cambrian.mutate.formats.diff", "cambrian.mutate.formats.full",
                   "cambrian.mutate.formats.function")
REPLY_FORMATS: Registry[ReplyFormat] = Registry(
    "reply format", builtins=BUILTIN_MODULES,
    hint=" A plugin module listed under search.plugins can register more.")


def register_format(reply_format: ReplyFormat) -> ReplyFormat:
    return REPLY_FORMATS.register(reply_format.name, reply_format)
