"""The grammar and the prompt instructions of a reply format, asked of the registered format
(``formats/``): a local model is held to its grammar, every model is shown its instructions."""

from __future__ import annotations

from cambrian.lang.languages import Language, as_language
from cambrian.mutate.formats.choice import format_named
from cambrian.mutate.grammar_parts import line_avoiding

__all__ = ["format_instructions", "grammar_for", "line_avoiding"]


def grammar_for(fmt: str, language: Language | str, blocks: int = 0,
                settings: bool = False) -> str:
    """The GBNF grammar that constrains a reply in format ``fmt`` (root rule: ``root``);
    ``blocks``: the parent's EVOLVE-BLOCK count (0: unknown or none); ``settings``: a function
    reply may also open with the line of an upper-case constant (setting lines)."""
    lang = as_language(language)
    return format_named(fmt, lang).grammar(lang, blocks, settings)


def format_instructions(fmt: str, language: Language | str, blocks: int = 0,
                        settings: bool = False) -> str:
    """Short instructions for reply format ``fmt`` with a fill-in template; ``settings``: the
    program has constants outside its functions that a function reply may change by their line
    (:mod:`cambrian.mutate.setting_lines`).

    The template holds placeholders, not a worked example: a small model copies a concrete
    example's change ("double x") as if it were an idea for its own program.
    """
    lang = as_language(language)
    return format_named(fmt, lang).instructions(lang, blocks, settings)
