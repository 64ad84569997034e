"""Reply formats by name: the built-in ones (``diff``, ``full``, ``function``, one module
each, which know nothing of this registry) are registered here; a plugin module listed under
``search.plugins`` registers more with :func:`register_format` when it is imported."""

from __future__ import annotations

from cambrian.core.registry import Registry
from cambrian.mutate.formats.base import ReplyFormat
from cambrian.mutate.formats.diff import DiffFormat
from cambrian.mutate.formats.full import FullFormat
from cambrian.mutate.formats.function import FunctionFormat

REPLY_FORMATS: Registry[ReplyFormat] = Registry(
    "reply format", hint=" A plugin module listed under search.plugins can register more.")


def register_format(reply_format: ReplyFormat) -> ReplyFormat:
    return REPLY_FORMATS.register(reply_format.name, reply_format)


for _builtin in (DiffFormat(), FullFormat(), FunctionFormat()):
    register_format(_builtin)
