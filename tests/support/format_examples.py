"""One tiny worked example per reply format and language: a (program, reply) pair that tests
use to check each format and grammar accepts a well-formed reply. (Prompts show a neutral
template instead; small models copy a concrete example's change as an idea.)
"""

from __future__ import annotations

from dataclasses import dataclass

from cambrian.lang.languages import Language
from cambrian.mutate.formats.registry import REPLY_FORMATS

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


def format_example(fmt: str, language: Language) -> FormatExample:
    old, new = _function(language, OLD_EXPR), _function(language, NEW_EXPR)
    program = _with_markers(language, old)
    reply = REPLY_FORMATS.get(fmt).example(program, old, new, language, DESCRIPTION)
    return FormatExample(program, reply)
