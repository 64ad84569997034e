"""The grammar and the prompt instructions of a reply format, asked of the registered format
(``formats/``): a local model is held to its grammar, every model is shown its instructions."""

from __future__ import annotations

from cambrian.lang.languages import Language, as_language
from cambrian.mutate.formats.choice import format_named
from cambrian.mutate.grammar_parts import line_avoiding, literal

__all__ = ["format_instructions", "grammar_for", "line_avoiding"]


def grammar_for(fmt: str, language: Language | str, blocks: int = 0,
                settings: bool = False, files: tuple[str, ...] = ()) -> str:
    """The GBNF grammar that constrains a reply in format ``fmt`` (root rule: ``root``);
    ``blocks``: the parent's EVOLVE-BLOCK count (0: unknown or none; per file, for several
    files); ``settings``: a function reply may also open with the line of an upper-case constant
    (setting lines); ``files``: the files a reply to a program of several files may change,
    each part of the reply then opening with its file's path on a line of its own."""
    lang = as_language(language)
    grammar = format_named(fmt, lang).grammar(lang, blocks, settings)
    return per_file_grammar(grammar, files) if files else grammar


def per_file_grammar(grammar: str, files: tuple[str, ...]) -> str:
    """A format's grammar as the body of each part of a reply to several files: an optional
    description, then up to one part per file, each its path's line then the format's body."""
    lines = grammar.split("\n")
    head = next(i for i, line in enumerate(lines) if line.startswith("root ::="))
    body = lines[head][len("root ::="):].strip()
    body = body.removeprefix("description?").strip()
    lines[head] = f"body ::= {body}"
    return "\n".join([
        f'root ::= description? part ( "\\n"? part ){{0,{max(len(files) - 1, 0)}}}',
        "part ::= file-line body",
        "file-line ::= ( " + " | ".join(literal(path) for path in files) + ' ) "\\n"',
        *lines,
    ])


def format_instructions(fmt: str, language: Language | str, blocks: int = 0,
                        settings: bool = False, files: tuple[str, ...] = ()) -> str:
    """Short instructions for reply format ``fmt`` with a fill-in template; ``settings``: the
    program has constants outside its functions that a function reply may change by their line
    (:mod:`cambrian.mutate.setting_lines`).

    The template holds placeholders, not a worked example: a small model copies a concrete
    example's change ("double x") as if it were an idea for its own program.
    """
    lang = as_language(language)
    text = format_named(fmt, lang).instructions(lang, blocks, settings)
    return text + "\n" + files_instruction(fmt, files) if files else text


def files_instruction(fmt: str, files: tuple[str, ...]) -> str:
    """How a reply to a program of several files names the file each part is for."""
    what = ("edit" if fmt == "diff" else "code block")
    return (f"The program has several files; those you may change: {', '.join(files)}. Before "
            f"each {what}, write the path of its file alone on a line, e.g.\n{files[0]}\n"
            "You may change one file or several; files you do not name stay as they are.")
