"""The ``full`` reply format: the whole program, or the new content of its EVOLVE-BLOCK(s)
(``full_rewrite.py`` applies it). Rewrites (full, cross, fix) always use it."""

from __future__ import annotations

from cambrian.lang.languages import Language
from cambrian.mutate.formats.base import AppliedReply, ReplyFormat
from cambrian.mutate.full_rewrite import apply_full_reply
from cambrian.mutate.grammar_parts import (
    FIRST_LINE,
    description_rule,
    fenced_code_grammar,
    line_avoiding,
    literal,
)


class FullFormat(ReplyFormat):
    name = "full"
    rewrite = True

    def apply(self, parent: str, reply: str, language: Language) -> AppliedReply:
        return apply_full_reply(parent, reply, language)

    def grammar(self, language: Language, blocks: int, settings: bool) -> str:
        return one_block_grammar(language) if blocks == 1 else fenced_code_grammar(language)

    def instructions(self, language: Language, blocks: int, settings: bool) -> str:
        fence = f"```{language.fence_tag}"
        noun = language.noun
        # No placeholder line inside the template: small models paste it into their code.
        if blocks == 0:
            return (FIRST_LINE + f"the whole {noun}, rewritten, in one {fence} code block.\n"
                    "Write nothing after the code block.")
        what = (f"ALL the {'text' if language.text else 'code'} of the EVOLVE-BLOCK, rewritten"
                if blocks == 1 else
                f"the whole {noun}, rewritten, with every EVOLVE-BLOCK marker line kept")
        every = ("all of it, not only the lines you change" if language.text else
                 "every function of the block, not only the ones you change")
        return (
            FIRST_LINE + f"{what}, in one {fence} code block. Write {every}. The code block "
            "looks like this:\n"
            f"{fence}\n{language.comment('EVOLVE-BLOCK-START')}\n...\n"
            f"{language.comment('EVOLVE-BLOCK-END')}\n```\n"
            "Write nothing after the code block.")

    def example(self, program: str, old: str, new: str, language: Language,
                description: str) -> str:
        return f"{description}\n```{language.fence_tag}\n{program.replace(old, new)}```\n"


def one_block_grammar(language: Language) -> str:
    """A full rewrite of a program's single EVOLVE-BLOCK, marker lines included: it must open
    with the START marker line and hold no other marker line than END before the closing
    fence (a small model otherwise echoes the whole file around a second, nested START)."""
    start, end = language.comment("EVOLVE-BLOCK-START"), language.comment("EVOLVE-BLOCK-END")
    marker_prefix = end[: end.index("EVOLVE-BLOCK") + len("EVOLVE-BLOCK")]
    return "\n".join([
        "root ::= description? code",
        description_rule(""),
        # The END line may be left out: a small model that echoes the fixed code after the
        # block then closes the fence anyway (full_rewrite.py drops the echo).
        f'code ::= {literal("```" + language.fence_tag)} "\\n" {literal(start)} "\\n" '
        f'code-line* ( {literal(end)} "\\n" )? "```" "\\n"?',
        f'code-line ::= {line_avoiding(("```", marker_prefix))} "\\n"',
    ])
