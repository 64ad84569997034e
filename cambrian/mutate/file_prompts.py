"""How a prompt shows a program of several files: each file under its path, in its own code
block; when the prompt must shrink to fit the model's window, the files that cannot change
(no EVOLVE-BLOCK) are summarised by their definitions' signatures instead of shown whole.
A one-file program is shown as one code block, as it always was."""

from __future__ import annotations

from cambrian.lang.definitions import find_definitions
from cambrian.lang.languages import Language
from cambrian.task.blocks import block_contents, line_text, split_lines
from cambrian.task.program_files import file_language, has_blocks, split_files

SUMMARY_LINES = 12  # signature lines shown of a summarised file, at most


def code_block(text: str, fence: str) -> str:
    return f"```{fence}\n{text.rstrip()}\n```"


def _fence(language: Language) -> str:
    return language.fence_tags[0] if language.fence_tags else ""


def has_fixed_files(source: str) -> bool:
    """Whether a program of several files has files without EVOLVE-BLOCKs (what a tight
    prompt summarises)."""
    files = split_files(source)
    return len(files) > 1 and any(not has_blocks(f.text) for f in files)


def file_summary(text: str, language: Language) -> str:
    """A fixed file's signatures: the first line of each top-level definition (or its first
    lines, for a language without a definitions parser)."""
    lines = [line_text(line) for line in split_lines(text)]
    try:
        found = [lines[d.start].strip() for d in find_definitions(text, language,
                                                                  top_level_only=True)]
    except (SyntaxError, ValueError):
        found = [line.strip() for line in lines if line.strip()]
    shown = found[:SUMMARY_LINES]
    more = f"\n... ({len(lines)} lines in all)" if len(found) > len(shown) else ""
    return "\n".join(shown) + more


def program_listing(source: str, language: Language, *, summarise_fixed: bool = False,
                    blocks_only: bool = False) -> str:
    """The program as a prompt shows it: one code block, or for several files one per file
    under a ``### path`` line (``summarise_fixed``: the files that cannot change by their
    signatures; ``blocks_only``: only the code inside the EVOLVE-BLOCKs)."""
    files = split_files(source)
    if len(files) == 1:
        text = "\n".join(block_contents(source)) if blocks_only else source
        return code_block(text, _fence(language))
    parts = []
    for file in files:
        lang = file_language(file.path, language)
        if has_blocks(file.text):
            text = "\n".join(block_contents(file.text)) if blocks_only else file.text
            parts.append(f"### {file.path}\n{code_block(text, _fence(lang))}")
        elif blocks_only:
            continue
        elif summarise_fixed:
            parts.append(f"### {file.path} (cannot change; its definitions)\n"
                         f"{code_block(file_summary(file.text, lang), _fence(lang))}")
        else:
            parts.append(f"### {file.path} (cannot change)\n"
                         f"{code_block(file.text, _fence(lang))}")
    return "\n\n".join(parts)
