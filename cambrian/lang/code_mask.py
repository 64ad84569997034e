"""Blank out comments, string/char literals and preprocessor lines of brace languages.

The masked text has the same length and the same newlines as the source, so offsets and line
numbers carry over, and braces inside comments or strings no longer count when matching.
Handles C/C++ (incl. raw strings R"x(...)x"), Rust (nested block comments, raw strings r#"..."#,
lifetimes vs char literals), Go (raw `strings`) and JavaScript/TypeScript (template literals).
"""

from __future__ import annotations

import io
import re
import tokenize

from cambrian.lang.language import Language

# Masking styles (Language.masking) of languages with C-like comments, braces and literals.
BRACE_STYLES = frozenset({"c", "cpp", "rust", "go", "javascript"})

_RUST_CHAR = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|.)|[^\\'\n])'")
_RUST_RAW_STRING = re.compile(r'b?r(#*)"')
_CPP_RAW_STRING = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')


def _blank(chars: list[str], start: int, end: int) -> None:
    for index in range(start, min(end, len(chars))):
        if chars[index] != "\n":
            chars[index] = " "


def _quoted_end(text: str, start: int, quote: str, multiline: bool) -> int:
    """Index just past the closing ``quote`` of the literal opened at ``start``."""
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == quote:
            return index + 1
        if char == "\n" and not multiline:
            return index  # unterminated: stop at the line end rather than eat the file
        index += 1
    return len(text)


def _block_comment_end(text: str, start: int, nested: bool) -> int:
    depth, index = 1, start + 2
    while index < len(text) and depth:
        if text.startswith("*/", index):
            depth, index = depth - 1, index + 2
        elif nested and text.startswith("/*", index):
            depth, index = depth + 1, index + 2
        else:
            index += 1
    return index


def _preprocessor_end(text: str, start: int) -> int:
    index = start
    while True:
        newline = text.find("\n", index)
        if newline == -1:
            return len(text)
        if text[:newline].rstrip("\r").endswith("\\"):
            index = newline + 1
            continue
        return newline


def _at_line_start(text: str, index: int) -> bool:
    line_start = text.rfind("\n", 0, index) + 1
    return not text[line_start:index].strip()


def _identifier_before(text: str, index: int) -> bool:
    return index > 0 and (text[index - 1].isalnum() or text[index - 1] == "_")


def _literal_end(text: str, index: int, name: str) -> int | None:
    """End of a string/char literal starting at ``index``, or None if none starts there."""
    char = text[index]
    if name == "rust" and char in "br" and not _identifier_before(text, index):
        raw = _RUST_RAW_STRING.match(text, index)
        if raw:
            closing = '"' + raw.group(1)
            end = text.find(closing, raw.end())
            return len(text) if end == -1 else end + len(closing)
    if name in ("c", "cpp") and char in "uULR" and not _identifier_before(text, index):
        raw = _CPP_RAW_STRING.match(text, index)
        if raw:
            closing = ")" + raw.group(1) + '"'
            end = text.find(closing, raw.end())
            return len(text) if end == -1 else end + len(closing)
    if char == '"':
        return _quoted_end(text, index, '"', multiline=name == "rust")
    if char == "`" and name == "go":  # raw string: no escapes
        end = text.find("`", index + 1)
        return len(text) if end == -1 else end + 1
    if char == "`" and name == "javascript":
        return _quoted_end(text, index, "`", multiline=True)
    if char == "'":
        if name == "rust":
            literal = _RUST_CHAR.match(text, index)
            return literal.end() if literal else None  # otherwise a lifetime such as 'a
        if name in ("c", "cpp") and index > 0 and text[index - 1].isalnum():
            return None  # C++14 digit separator: 1'000'000
        return _quoted_end(text, index, "'", multiline=False)
    return None


def mask_code(source: str, language: Language, *, comments_only: bool = False) -> str:
    """``source`` with comments, literals and preprocessor lines replaced by spaces (with
    ``comments_only``, only the comments; literals are still skipped whole, so a ``//`` inside a
    string is not taken for a comment)."""
    return mask_style(source, language.masking, comments_only=comments_only)


def mask_style(source: str, style: str, *, comments_only: bool = False) -> str:
    """:func:`mask_code` for a masking style (``Language.masking``)."""
    name = style
    chars = list(source)
    index = 0
    while index < len(source):
        char = source[index]
        comment = True
        if char == "/" and source.startswith("//", index):
            end = source.find("\n", index)
            end = len(source) if end == -1 else end
        elif char == "/" and source.startswith("/*", index):
            end = _block_comment_end(source, index, nested=name == "rust")
        elif char == "#" and name in ("c", "cpp") and _at_line_start(source, index):
            end, comment = _preprocessor_end(source, index), False
        else:
            literal_end = _literal_end(source, index, name)
            if literal_end is None:
                index += 1
                continue
            end, comment = literal_end, False
        if comment or not comments_only:
            _blank(chars, index, end)
        index = max(end, index + 1)
    return "".join(chars)


def code_tokens(source: str, language: Language) -> list[str]:
    """The code of ``source`` without its comments and layout, as a token list: two programs
    with equal lists differ only in comments, blank lines or spacing (Python keeps its
    indentation structure). Code that does not tokenise falls back to whitespace-split text."""
    if language.masking == "python":
        skipped = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING}
        try:
            return [token.string if token.type not in (tokenize.INDENT, tokenize.DEDENT)
                    else tokenize.tok_name[token.type]
                    for token in tokenize.generate_tokens(io.StringIO(source).readline)
                    if token.type not in skipped]
        except (tokenize.TokenError, IndentationError, SyntaxError):
            return source.split()
    if language.masking not in BRACE_STYLES:
        return source.split()
    return mask_code(source, language, comments_only=True).split()
