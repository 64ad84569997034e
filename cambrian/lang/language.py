"""What Cambrian knows of a programming language, as one object: its comment syntax and code
fences, how its top-level functions are found, how its syntax is checked, how the judge compiles
and runs it, and the hooks its reply grammars and prompts use. Built-in languages are defined in
``builtin.py``; a plugin module registers another with
:func:`cambrian.lang.languages.register_language` (``docs/extending.md``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cambrian.lang.toolchain import Toolchain


@dataclass(frozen=True)
class Definition:
    """A function (or, in Python, class) definition, as whole-line spans."""

    name: str
    start: int  # first line (0-based), decorators/attributes/template prefix included
    end: int  # one past the last line
    depth: int  # 0 for top level, 1 for a method, ...


# (source, top_level_only) -> definitions in source order; raises SyntaxError when the source
# cannot be parsed.
DefinitionsParser = Callable[[str, bool], list[Definition]]
SyntaxCheck = Callable[[str], str | None]  # None when the source passes, else a short message
ToolchainFactory = Callable[[str], Toolchain]  # given the Python interpreter of the run


@dataclass(frozen=True)
class Language:
    name: str
    extensions: tuple[str, ...]  # lower-case, with the leading dot
    line_comment: str | None
    block_comment: tuple[str, str] | None
    fence_tags: tuple[str, ...]  # first one is what Cambrian writes; all are accepted
    # How comments and literals are blanked (code_mask.py): python, c, cpp, rust, go,
    # javascript (template literals), or plain (comments only, by the syntax above).
    masking: str = "plain"
    # Top-level function definitions: the whole-function reply format and setting lines work
    # only for languages that have a parser.
    definitions: DefinitionsParser | None = None
    syntax_check: SyntaxCheck | None = None  # before a child is spent on an evaluation
    toolchain: ToolchainFactory | None = None  # a judged task: compile once, run per case
    # How the first line of a whole-function reply may start (the local grammar holds a small
    # model to it; it otherwise sends the few changed statements without their function).
    function_openings: tuple[str, ...] = ()
    function_template: str = "(the complete changed function)"  # the prompt's fill-in
    # A regular expression for lines that stay above the EVOLVE-BLOCK when an LLM-written first
    # program has no markers (imports, includes); None: the block starts at the first line.
    header_line: str | None = None
    # A text artifact (a prompt, a document, a config), not a program: prompts speak of a text
    # and of its wording, never of functions, algorithms or speed (``mutate/text_artifacts.py``).
    text: bool = False

    @property
    def fence_tag(self) -> str:
        """The tag Cambrian puts after ``` (empty for the generic language)."""
        return self.fence_tags[0] if self.fence_tags else ""

    @property
    def noun(self) -> str:
        """What prompts call one candidate: "program", or "text" for a text artifact."""
        return "text" if self.text else "program"

    def comment(self, text: str) -> str:
        """``text`` as a one-line comment in this language; a language without comments (plain
        text) writes it as a line of its own, which is how its EVOLVE-BLOCK markers look."""
        if self.line_comment:
            return f"{self.line_comment} {text}"
        if self.block_comment:
            opener, closer = self.block_comment
            return f"{opener} {text} {closer}"
        return text
