"""Apply an LLM reply to the parent program, in a registered reply format (``formats/``):

* ``diff``: SEARCH/REPLACE edits (:mod:`cambrian.mutate.search_replace`);
* ``full``: the whole program or the new block content (:mod:`cambrian.mutate.full_rewrite`);
* ``function``: complete function definitions (:mod:`cambrian.mutate.function_patch`).

Every failure raises :class:`PatchError` with a short, concrete message meant to be sent back
to the model for another try. Code outside the EVOLVE-BLOCKs never changes, whatever the reply.
A reply to a program of several files is cut into its files' parts first (``file_replies.py``).
"""

from __future__ import annotations

import re

from cambrian.lang.languages import Language, as_language
from cambrian.mutate.file_replies import apply_to_files, without_file_lines
from cambrian.mutate.formats.choice import format_named
from cambrian.mutate.patch_types import PatchError, PatchResult
from cambrian.mutate.reply_text import extract_description, is_fence_line
from cambrian.mutate.search_replace import is_search_marker
from cambrian.task.blocks import BlockError, check_immutable_unchanged

# Reasoning models may draft code inside <think>; only the final answer counts.
_REASONING = re.compile(r"<think>.*?</think>", re.DOTALL)

__all__ = ["PatchError", "PatchResult", "apply_reply"]


def _starts_code(line: str) -> bool:
    return is_fence_line(line) or is_search_marker(line)


def apply_reply(fmt: str, parent_source: str, reply_text: str, language: Language | str) -> PatchResult:
    """The child program that ``reply_text`` describes, in reply format ``fmt``.

    ``language`` is a :class:`Language` or its name. Raises :class:`PatchError` when the reply
    cannot be applied (``PatchError.truncated`` tells a cut-off reply apart), ``ValueError`` for
    an unknown format or a language the format does not support, and :class:`BlockError` if the
    parent's own markers are malformed.
    """
    lang = as_language(language)
    reply_format = format_named(fmt, lang)
    reply = _REASONING.sub("", reply_text)
    source, n_edits, notes = apply_to_files(reply_format.apply, parent_source, reply, lang,
                                            by_name=reply_format.name == "function")
    try:
        check_immutable_unchanged(parent_source, source)
    except BlockError as exc:  # a bug guard: every format already keeps the outside text
        raise PatchError(str(exc)) from None
    return PatchResult(source, extract_description(without_file_lines(reply, parent_source),
                                                   _starts_code), n_edits, notes)
