"""Which reply format a proposal asks a model for."""

from __future__ import annotations

from cambrian.config import ModelConfig
from cambrian.lang.languages import Language
from cambrian.mutate.formats.base import ReplyFormat
from cambrian.mutate.formats.registry import REPLY_FORMATS

REWRITE_KINDS = ("full", "cross", "fix")


def reply_format(model: ModelConfig, kind: str, language: Language, local: bool,
                 files: tuple[Language, ...] = ()) -> str:
    """The format to ask ``model`` for, for one mutation kind.

    Rewrites (full, cross, fix) always return the whole block. Focused edits use the model's
    ``patch_format``; ``auto`` means SEARCH/REPLACE, except that small ``local`` models get
    whole-function replacement where the language allows it (``files``: the languages of the
    files a reply to a program of several files may change, which it must allow too), and the
    whole text for a text artifact: a text has no functions, and the 1.5B sent a prompt back
    unchanged, copied the format's placeholder or ran past its reply limit in 9 of 10 SEARCH/
    REPLACE replies to a one-line prompt (examples/prompt_classifier).
    """
    if kind in REWRITE_KINDS:
        return "full"
    if model.patch_format != "auto":
        return REPLY_FORMATS.get(model.patch_format).name
    if local and language.text and not files:
        return "full"
    function = REPLY_FORMATS.get("function")
    if local and all(function.supports(lang) for lang in (language, *files)):
        return "function"
    return "diff"


def format_named(name: str, language: Language) -> ReplyFormat:
    """The registered format ``name``; a ValueError when it does not support ``language``."""
    found = REPLY_FORMATS.get(name)
    if not found.supports(language):
        raise ValueError(f"the {name} reply format does not support {language.name}; "
                         "use the diff or full format")
    return found
