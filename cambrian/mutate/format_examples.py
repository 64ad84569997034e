"""One tiny worked example per reply format and language: a (program, reply) pair that tests
use to check each format and grammar accepts a well-formed reply. (Prompts show a neutral
template instead; small models copy a concrete example's change as an idea.)
"""

from __future__ import annotations

from dataclasses import dataclass

from cambrian.lang.languages import Language

# One function per language; "EXPR" is replaced by the old or new expression.
_FUNCTIONS: dict[str, str] = {
    "python": "def score(x):\n    return EXPR\n",
    "cpp": "int score(int x) {\n    return EXPR;\n}\n",
    "c": "int score(int x) {\n    return EXPR;\n}\n",
    "rust": "fn score(x: i64) -> i64 {\n    EXPR\n}\n",
    "javascript": "function score(x) {\n  return EXPR;\n}\n",
    "typescript": "function score(x: number): number {\n  return EXPR;\n}\n",
    "go": "func score(x int) int {\n\treturn EXPR\n}\n",
    "julia": "function score(x)\n    return EXPR\nend\n",
    "lua": "local function score(x)\n  return EXPR\nend\n",
    "shell": "score() {\n  echo $(( EXPR ))\n}\n",
    "generic": "EXPR\n",
}
OLD_EXPR = "x + 1"
NEW_EXPR = "x * 2"
DESCRIPTION = "Double x instead of adding 1."


@dataclass(frozen=True)
class FormatExample:
    program: str  # the program the example reply is written against
    reply: str  # a complete, valid reply in the format


def _function(language: Language, expression: str) -> str:
    return _FUNCTIONS.get(language.name, _FUNCTIONS["generic"]).replace("EXPR", expression)


def _with_markers(language: Language, code: str) -> str:
    return f"{language.comment('EVOLVE-BLOCK-START')}\n{code}{language.comment('EVOLVE-BLOCK-END')}\n"


def _changed_line(old: str, new: str) -> tuple[str, str]:
    for old_line, new_line in zip(old.splitlines(), new.splitlines()):
        if old_line != new_line:
            return old_line, new_line
    raise AssertionError("the example functions must differ")


def format_example(fmt: str, language: Language) -> FormatExample:
    old, new = _function(language, OLD_EXPR), _function(language, NEW_EXPR)
    program = _with_markers(language, old)
    fence = f"```{language.fence_tag}"
    if fmt == "diff":
        old_line, new_line = _changed_line(old, new)
        reply = f"{DESCRIPTION}\n<<<<<<< SEARCH\n{old_line}\n=======\n{new_line}\n>>>>>>> REPLACE\n"
    elif fmt == "full":
        reply = f"{DESCRIPTION}\n{fence}\n{_with_markers(language, new)}```\n"
    elif fmt == "function":
        reply = f"{DESCRIPTION}\n{fence}\n{new}```\n"
    else:
        raise ValueError(f"unknown patch format {fmt!r}")
    return FormatExample(program, reply)
