"""What a reply format is: how a model's reply becomes a child program, the grammar that holds a
local model to it, and the instructions the prompt gives for it."""

from __future__ import annotations

from abc import ABC, abstractmethod

from cambrian.config import PromptConfig
from cambrian.lang.languages import Language

AppliedReply = tuple[str, int, list[str]]  # (child source, edits, notes)


class ReplyFormat(ABC):
    """One reply format. Subclasses set ``name`` and implement the abstract methods; the
    module that defines one registers it with :func:`cambrian.mutate.formats.register_format`.
    """

    name: str = ""
    # The reply is one fenced code block: a remote model is stopped right after it.
    code_block: bool = True
    # Rewrites (full, cross, fix) use this format whatever the model's patch_format says.
    rewrite: bool = False

    def supports(self, language: Language) -> bool:
        return True

    def reply_tokens(self, prompt: PromptConfig) -> int:
        """The reply budget when the model does not set its own ``max_tokens``."""
        return prompt.reply_tokens_full

    @abstractmethod
    def apply(self, parent: str, reply: str, language: Language) -> AppliedReply:
        """The child the reply describes; raises ``PatchError`` with a message for the model."""

    @abstractmethod
    def grammar(self, language: Language, blocks: int, settings: bool) -> str:
        """A GBNF grammar (root rule ``root``) accepting exactly the replies of this format;
        ``blocks``: the parent's EVOLVE-BLOCK count (0: none or unknown); ``settings``: the
        parent has constants outside its functions a reply may change by their line."""

    @abstractmethod
    def instructions(self, language: Language, blocks: int, settings: bool) -> str:
        """The "Reply format:" paragraph of the prompt."""

    @abstractmethod
    def example(self, program: str, old: str, new: str, language: Language,
                description: str) -> str:
        """A well-formed reply turning ``old`` (a function of ``program``) into ``new``: what
        tests check the grammar and the applier against."""
