"""The ``diff`` reply format: SEARCH/REPLACE edits (``search_replace.py`` applies them)."""

from __future__ import annotations

from cambrian.config import PromptConfig
from cambrian.lang.languages import Language
from cambrian.mutate.formats.base import AppliedReply, ReplyFormat
from cambrian.mutate.grammar_parts import FIRST_LINE, description_rule, line_avoiding
from cambrian.mutate.search_replace import apply_diff_reply

MAX_DIFF_EDITS = 4
MARKER_PREFIXES = ("<<<<<", "=====", ">>>>>")


class DiffFormat(ReplyFormat):
    name = "diff"
    code_block = False

    def reply_tokens(self, prompt: PromptConfig) -> int:
        return prompt.reply_tokens_diff

    def apply(self, parent: str, reply: str, language: Language) -> AppliedReply:
        return apply_diff_reply(parent, reply)

    def grammar(self, language: Language, blocks: int, settings: bool) -> str:
        """One to four edits in the exact marker syntax; no code line may start like a marker,
        so markers cannot be confused with code."""
        return "\n".join([
            f'root ::= description? edit ( "\\n"? edit ){{0,{MAX_DIFF_EDITS - 1}}}',
            description_rule("<"),
            'edit ::= "<<<<<<< SEARCH\\n" code-line* "=======\\n" code-line* ">>>>>>> REPLACE\\n"',
            f'code-line ::= {line_avoiding(MARKER_PREFIXES)} "\\n"',
        ])

    def instructions(self, language: Language, blocks: int, settings: bool) -> str:
        where = "inside the EVOLVE-BLOCK" if blocks or not language.text else "in the text"
        return (
            FIRST_LINE + "one or more edits:\n"
            f"<<<<<<< SEARCH\n(lines copied exactly from the current {language.noun}, with "
            "their indentation)\n=======\n(the new lines)\n>>>>>>> REPLACE\n"
            f"Keep each SEARCH short: a few whole lines that appear once {where}.\n"
            "Write nothing else.")

    def example(self, program: str, old: str, new: str, language: Language,
                description: str) -> str:
        old_line, new_line = next((a, b) for a, b in zip(old.splitlines(), new.splitlines())
                                  if a != b)
        return (f"{description}\n<<<<<<< SEARCH\n{old_line}\n=======\n{new_line}\n"
                ">>>>>>> REPLACE\n")
