"""The ``function`` reply format: complete definitions of the functions a reply changes
(``function_patch.py`` applies it). Small local models get it by default where the language
defines functions: they copy SEARCH lines inexactly far more often than they rewrite a function
correctly."""

from __future__ import annotations

from cambrian.lang.definitions import supports_functions
from cambrian.lang.languages import Language
from cambrian.mutate.formats.base import AppliedReply, ReplyFormat
from cambrian.mutate.function_patch import apply_function_reply
from cambrian.mutate.grammar_parts import FIRST_LINE, fenced_code_grammar


class FunctionFormat(ReplyFormat):
    name = "function"

    def supports(self, language: Language) -> bool:
        return supports_functions(language)

    def apply(self, parent: str, reply: str, language: Language) -> AppliedReply:
        return apply_function_reply(parent, reply, language)

    def grammar(self, language: Language, blocks: int, settings: bool) -> str:
        return fenced_code_grammar(language, language.function_openings, settings)

    def instructions(self, language: Language, blocks: int, settings: bool) -> str:
        fence = f"```{language.fence_tag}"
        return (
            FIRST_LINE + f"one {fence} code block with the complete new version of the function "
            "you change, from its first line to its last. Only functions inside the "
            "EVOLVE-BLOCK can change; you may add new helper functions.\n"
            + ("To change a constant defined outside the functions, write its line with the new "
               "value in the code block.\n" if settings else "")
            + f"{fence}\n{language.function_template}\n```\n"
            "Write nothing after the code block.")

    def example(self, program: str, old: str, new: str, language: Language,
                description: str) -> str:
        return f"{description}\n```{language.fence_tag}\n{new}```\n"
