"""GBNF grammars (llama.cpp syntax) that hold a local model to a reply format, and the short
format instructions shown in the prompt.

Every grammar has the same shape: an optional single description line (short, no backticks),
then the code part, after which generation can only end. Inside code any characters are allowed
(unicode too); only the structure is fixed:

* ``full`` / ``function``: exactly one block ```` ```<tag> ```` ... ```` ``` ````; no body line
  may start with ```` ``` ````, so the model cannot close the fence early or open another one.
  A ``full`` reply for a program with one EVOLVE-BLOCK must open with the START marker line and
  hold no other marker line than the END line before the closing fence: a small model
  otherwise echoes the whole file around a second, nested START marker;
* ``diff``: one to four SEARCH/REPLACE edits in the exact marker syntax; no code line may start
  like a marker (``<<<<<``, ``=====``, ``>>>>>``), so markers cannot be confused with code.
"""

from __future__ import annotations

from cambrian.lang.definitions import supports_functions
from cambrian.lang.languages import Language, as_language

MAX_DESCRIPTION_CHARS = 100
MAX_DIFF_EDITS = 4
_MARKER_PREFIXES = ("<<<<<", "=====", ">>>>>")


def _char_class_escape(chars: str) -> str:
    return "".join("\\" + c if c in "]\\^-[" else c for c in chars)


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def line_avoiding(prefixes: tuple[str, ...]) -> str:
    """A GBNF expression for one line's text (no "\\n") that starts with none of ``prefixes``.

    Walks the prefixes' trie: at each node the line may end, continue with a character that
    leaves every prefix, or follow a child that does not complete a prefix."""
    first_chars = sorted({prefix[0] for prefix in prefixes})
    alternatives = [f"[^{_char_class_escape(''.join(first_chars))}\\n] [^\\n]*"]
    for char in first_chars:
        rests = tuple(prefix[1:] for prefix in prefixes if prefix[0] == char)
        if "" in rests:
            continue  # this character completes a forbidden prefix
        alternatives.append(f"{_literal(char)} {line_avoiding(rests)}")
    return "( " + " | ".join(alternatives) + " )?"


def _description_rule(excluded_first: str) -> str:
    # No backticks at all: a small model otherwise drifts into opening the code fence mid-line.
    first = f"[^{_char_class_escape(excluded_first)}`\\n]"
    return f"description ::= {first} [^`\\n]{{0,{MAX_DESCRIPTION_CHARS - 1}}} \"\\n\""


# How the first line of a whole-function reply may start, per language: a small model otherwise
# sends the few changed statements without their function, which cannot be placed.
FUNCTION_OPENINGS = {"python": ("def ", "async def ", "@", "import ", "from ", "class ")}
# A Python function reply may also open with a module-level constant's line (setting lines).
_UPPER_NAME_OPENING = "[A-Z_] [A-Za-z0-9_]* \" \"* \"=\""


def _fenced_code_grammar(language: Language, openings: tuple[str, ...] = (),
                         settings: bool = False) -> str:
    alternatives = [_literal(o) for o in openings] + (
        [_UPPER_NAME_OPENING] if openings and settings else [])
    first = (" ( " + " | ".join(alternatives) + ' ) [^\\n]* "\\n"' if openings else "")
    return "\n".join(
        [
            "root ::= description? code",
            _description_rule(""),
            f'code ::= {_literal("```" + language.fence_tag)} "\\n"{first} code-line* "```" "\\n"?',
            f'code-line ::= {line_avoiding(("```",))} "\\n"',
        ]
    )


def _one_block_grammar(language: Language) -> str:
    """A full rewrite of a program's single EVOLVE-BLOCK, marker lines included."""
    start, end = language.comment("EVOLVE-BLOCK-START"), language.comment("EVOLVE-BLOCK-END")
    marker_prefix = end[: end.index("EVOLVE-BLOCK") + len("EVOLVE-BLOCK")]
    return "\n".join(
        [
            "root ::= description? code",
            _description_rule(""),
            # The END line may be left out: a small model that echoes the fixed code after
            # the block then closes the fence anyway (full_rewrite.py drops the echo).
            f'code ::= {_literal("```" + language.fence_tag)} "\\n" {_literal(start)} "\\n" '
            f'code-line* ( {_literal(end)} "\\n" )? "```" "\\n"?',
            f'code-line ::= {line_avoiding(("```", marker_prefix))} "\\n"',
        ]
    )


def _diff_grammar() -> str:
    return "\n".join(
        [
            f'root ::= description? edit ( "\\n"? edit ){{0,{MAX_DIFF_EDITS - 1}}}',
            _description_rule("<"),
            'edit ::= "<<<<<<< SEARCH\\n" code-line* "=======\\n" code-line* ">>>>>>> REPLACE\\n"',
            f'code-line ::= {line_avoiding(_MARKER_PREFIXES)} "\\n"',
        ]
    )


def grammar_for(fmt: str, language: Language | str, blocks: int = 0,
                settings: bool = False) -> str:
    """The GBNF grammar that constrains a reply in format ``fmt`` (root rule: ``root``);
    ``blocks``: the parent's EVOLVE-BLOCK count (0: unknown or none); ``settings``: a function
    reply may also open with the line of an upper-case constant (setting lines)."""
    lang = as_language(language)
    if fmt == "diff":
        return _diff_grammar()
    if fmt == "full":
        return _one_block_grammar(lang) if blocks == 1 else _fenced_code_grammar(lang)
    if fmt == "function":
        if not supports_functions(lang):
            raise ValueError(f"the function reply format does not support {lang.name}; use diff or full")
        return _fenced_code_grammar(lang, FUNCTION_OPENINGS.get(lang.name, ()), settings)
    raise ValueError(f"unknown patch format {fmt!r}; expected diff, full or function")


_FIRST_LINE = "Reply format: one short line saying what you change (at most 15 words), then "


def format_instructions(fmt: str, language: Language | str, blocks: int = 0,
                        settings: bool = False) -> str:
    """Short instructions for reply format ``fmt`` with a fill-in template; ``settings``: the
    program has constants outside its functions that a function reply may change by their line
    (:mod:`cambrian.mutate.setting_lines`).

    The template holds placeholders, not a worked example: a small model copies a concrete
    example's change ("double x") as if it were an idea for its own program.
    """
    lang = as_language(language)
    grammar_for(fmt, lang)  # same validation of fmt/language as the grammar
    fence = f"```{lang.fence_tag}"
    if fmt == "diff":
        return (
            _FIRST_LINE + "one or more edits:\n"
            "<<<<<<< SEARCH\n(lines copied exactly from the current program, with their indentation)\n"
            "=======\n(the new lines)\n>>>>>>> REPLACE\n"
            "Keep each SEARCH short: a few whole lines that appear once inside the EVOLVE-BLOCK.\n"
            "Write nothing else."
        )
    if fmt == "full":
        # No placeholder line inside the template: small models paste it into their code.
        if blocks == 0:
            return (_FIRST_LINE + f"the whole program, rewritten, in one {fence} code block.\n"
                    "Write nothing after the code block.")
        what = ("ALL the code of the EVOLVE-BLOCK, rewritten" if blocks == 1 else
                "the whole program, rewritten, with every EVOLVE-BLOCK marker line kept")
        return (
            _FIRST_LINE + f"{what}, in one {fence} code block. Write every function of the "
            "block, not only the ones you change. The code block looks like this:\n"
            f"{fence}\n{lang.comment('EVOLVE-BLOCK-START')}\n...\n"
            f"{lang.comment('EVOLVE-BLOCK-END')}\n```\n"
            "Write nothing after the code block."
        )
    return (
        _FIRST_LINE + f"one {fence} code block with the complete new version of the function you "
        "change, from its first line to its last. Only functions inside the EVOLVE-BLOCK can "
        "change; you may add new helper functions.\n"
        + ("To change a constant defined outside the functions, write its line with the new "
           "value in the code block.\n" if settings else "")
        + f"{fence}\n{_function_template(lang)}\n```\n"
        "Write nothing after the code block."
    )


def _function_template(language: Language) -> str:
    if language.name == "python":
        return "def <name>(<parameters>):\n    <its complete new body>"
    return "(the complete changed function)"
