"""Building blocks of the GBNF grammars (llama.cpp syntax) that hold a local model to a reply
format, shared by the formats (``formats/``).

Every grammar has the same shape: an optional single description line (short, no backticks),
then the code part, after which generation can only end. Inside code any characters are allowed
(unicode too); only the structure is fixed: a fenced code block holds no body line starting
with ```` ``` ````, so the model cannot close the fence early or open another one.
"""

from __future__ import annotations

from cambrian.lang.languages import Language

MAX_DESCRIPTION_CHARS = 100
FIRST_LINE = "Reply format: one short line saying what you change (at most 15 words), then "
# A function reply may also open with a module-level constant's line (setting lines).
_UPPER_NAME_OPENING = "[A-Z_] [A-Za-z0-9_]* \" \"* \"=\""


def _char_class_escape(chars: str) -> str:
    return "".join("\\" + c if c in "]\\^-[" else c for c in chars)


def literal(text: str) -> str:
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
        alternatives.append(f"{literal(char)} {line_avoiding(rests)}")
    return "( " + " | ".join(alternatives) + " )?"


def description_rule(excluded_first: str) -> str:
    # No backticks at all: a small model otherwise drifts into opening the code fence mid-line.
    first = f"[^{_char_class_escape(excluded_first)}`\\n]"
    return f"description ::= {first} [^`\\n]{{0,{MAX_DESCRIPTION_CHARS - 1}}} \"\\n\""


def fenced_code_grammar(language: Language, openings: tuple[str, ...] = (),
                        settings: bool = False) -> str:
    """One fenced code block; with ``openings``, its first line must start with one of them
    (a small model otherwise sends the few changed statements without their function), or
    with a constant's line when ``settings``."""
    alternatives = [literal(o) for o in openings] + (
        [_UPPER_NAME_OPENING] if openings and settings else [])
    first = (" ( " + " | ".join(alternatives) + ' ) [^\\n]* "\\n"' if openings else "")
    return "\n".join([
        "root ::= description? code",
        description_rule(""),
        f'code ::= {literal("```" + language.fence_tag)} "\\n"{first} code-line* "```" "\\n"?',
        f'code-line ::= {line_avoiding(("```",))} "\\n"',
    ])
