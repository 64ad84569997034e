"""Which reply format a proposal asks a model for."""

from __future__ import annotations

from cambrian.config import ModelConfig
from cambrian.lang.definitions import supports_functions
from cambrian.lang.languages import Language


def reply_format(model: ModelConfig, kind: str, language: Language) -> str:
    """The patch format to ask ``model`` for, for one mutation kind.

    Rewrites (full, cross, fix) always return the whole block. Focused edits use SEARCH/REPLACE,
    except that small local models get whole-function replacement where the language allows it:
    they copy SEARCH lines inexactly far more often than they rewrite a function correctly.
    """
    if kind in ("full", "cross", "fix"):
        return "full"
    if model.patch_format != "auto":
        return model.patch_format
    if model.provider == "local" and supports_functions(language):
        return "function"
    return "diff"
