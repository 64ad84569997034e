"""Text artifacts as languages: which files are text, how their EVOLVE-BLOCK markers are written
and read, which checks apply (YAML and JSON parse; plain text and markdown have none), and that
no code analysis (functions, focus, settings) is offered for them."""

from __future__ import annotations

import numpy as np
import pytest

from cambrian.config import ModelConfig
from cambrian.lang.definitions import supports_functions
from cambrian.lang.languages import (
    JSON,
    MARKDOWN,
    PYTHON,
    TEXT,
    YAML,
    Language,
    language_by_name,
    language_for_fence_tag,
    language_for_path,
)
from cambrian.lang.syntax import check_syntax
from cambrian.mutate.focus import choose_focus
from cambrian.mutate.formats.choice import format_named, reply_format
from cambrian.mutate.setting_lines import offers_setting_lines
from cambrian.mutate.tuning_targets import tuning_target_lines
from cambrian.task.blocks import (
    END_TOKEN,
    START_TOKEN,
    block_contents,
    parse_regions,
    replace_block_contents,
    without_markers,
)
from cambrian.task.program_files import ProgramFile, join_files, split_files

PROMPT = "You classify sentences.\nUse 3 labels and a 0.7 threshold.\nAnswer in one word.\n"


@pytest.mark.parametrize(("path", "name"), [
    ("initial.txt", "text"), ("system.prompt", "text"), ("guide.md", "markdown"),
    ("notes.markdown", "markdown"), ("initial.yaml", "yaml"), ("settings.yml", "yaml"),
    ("initial.json", "json"),
])
def test_text_files_are_text_artifacts(path: str, name: str) -> None:
    language = language_for_path(path)
    assert language.name == name and language.text and language.noun == "text"
    assert language_by_name(name) is language
    assert not PYTHON.text and PYTHON.noun == "program"
    assert language_for_fence_tag("text") is TEXT and language_for_fence_tag("md") is MARKDOWN


@pytest.mark.parametrize(("language", "start_line"), [
    (TEXT, "EVOLVE-BLOCK-START"),
    (MARKDOWN, "<!-- EVOLVE-BLOCK-START -->"),
    (YAML, "# EVOLVE-BLOCK-START"),
])
def test_markers_are_a_line_of_their_own_or_the_languages_comment(language: Language,
                                                                   start_line: str) -> None:
    assert language.comment(START_TOKEN) == start_line
    source = (f"Fixed first line.\n{language.comment(START_TOKEN)}\nThe evolving line.\n"
              f"{language.comment(END_TOKEN)}\nFixed last line.\n")
    regions = parse_regions(source)
    assert regions.has_markers and block_contents(source) == ["The evolving line.\n"]
    changed = replace_block_contents(source, ["A better line.\n"])
    assert changed == source.replace("The evolving line.", "A better line.")
    assert without_markers(changed) == "Fixed first line.\nA better line.\nFixed last line.\n"


def test_a_text_without_markers_evolves_whole_and_keeps_marker_words_in_sentences() -> None:
    regions = parse_regions(PROMPT)
    assert not regions.has_markers and block_contents(PROMPT) == [PROMPT]
    assert replace_block_contents(PROMPT, ["New text.\n"]) == "New text.\n"
    sentence = "Never write EVOLVE-BLOCK-START in an answer.\n"
    assert without_markers(sentence) == sentence  # a sentence mentioning it is no marker


def test_yaml_and_json_are_checked_by_parsing_plain_text_and_markdown_are_not() -> None:
    assert check_syntax("# EVOLVE-BLOCK-START\nrate: 0.5\nsteps: [1, 2]\n", YAML) is None
    assert check_syntax("rate: 0.5\nsteps: [1, 2\nnext: 3\n", YAML).startswith("line 3:")
    assert check_syntax('{"rate": 0.5}', JSON) is None
    assert check_syntax('{"rate": 0.5,\n}', JSON).startswith("line 2:")
    assert check_syntax("{unbalanced: [ ``` <!--", TEXT) is None
    assert check_syntax("{unbalanced: [ ``` <!--", MARKDOWN) is None


@pytest.mark.parametrize("language", [TEXT, MARKDOWN, YAML, JSON])
def test_no_code_analysis_is_offered_for_a_text(language: Language) -> None:
    assert not supports_functions(language)
    with pytest.raises(ValueError, match=f"does not support {language.name}"):
        format_named("function", language)
    # A local model rewrites a text whole, never a function; a remote one sends SEARCH/REPLACE.
    assert reply_format(ModelConfig(), "diff", language, local=True) == "full"
    assert reply_format(ModelConfig(), "diff", language, local=False) == "diff"
    assert reply_format(ModelConfig(patch_format="diff"), "diff", language, local=True) == "diff"
    assert choose_focus(np.random.default_rng(0), PROMPT, language) is None
    assert tuning_target_lines(PROMPT, language) == []  # numbers in prose are no settings
    assert not offers_setting_lines("diff", PROMPT, language)


def test_text_files_keep_their_place_in_a_program_of_several_files() -> None:
    files = [ProgramFile("solver.py", "x = 1\n"), ProgramFile("prompt.txt", "Answer.\n"),
             ProgramFile("config.json", '{"rate": 1}\n'), ProgramFile("guide.md", "Read me.\n"),
             ProgramFile("settings.yaml", "rate: 1\n")]
    bundle = join_files(files)
    # A language without comments gets a "#" header: it lives in the bundle, never in the file.
    assert "# ==> prompt.txt <==\n" in bundle and "# ==> config.json <==\n" in bundle
    assert "<!-- ==> guide.md <== -->\n" in bundle
    assert split_files(bundle) == files
