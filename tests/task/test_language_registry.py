from __future__ import annotations

from pathlib import Path

import pytest

from cambrian.lang.languages import (
    CPP,
    GENERIC,
    LANGUAGES,
    PYTHON,
    RUST,
    as_language,
    language_by_name,
    language_for_fence_tag,
    language_for_path,
)


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("solver.py", "python"),
        ("dir/main.cpp", "cpp"),
        ("x.cc", "cpp"),
        ("x.cxx", "cpp"),
        ("include/x.HPP", "cpp"),
        ("x.c", "c"),
        ("lib.rs", "rust"),
        ("app.mjs", "javascript"),
        ("app.tsx", "typescript"),
        ("main.go", "go"),
        ("model.jl", "julia"),
        ("init.lua", "lua"),
        ("run.sh", "shell"),
        ("notes.txt", "text"),
        ("notes.md", "markdown"),
        ("Makefile", "generic"),
        ("data.csv", "generic"),
    ],
)
def test_language_for_path_uses_the_extension(path: str, name: str) -> None:
    assert language_for_path(Path(path)).name == name


def test_language_by_name_accepts_names_and_fence_aliases_case_insensitively() -> None:
    assert language_by_name("python") is PYTHON
    assert language_by_name("C++") is CPP
    assert language_by_name(" rs ") is RUST
    assert language_by_name("generic") is GENERIC


def test_unknown_language_name_raises_key_error_listing_known_names() -> None:
    with pytest.raises(KeyError, match="known languages: python, cpp"):
        language_by_name("cobol")


def test_every_language_is_reachable_by_its_own_name_and_tags() -> None:
    for language in LANGUAGES:
        assert language_by_name(language.name) is language
        for tag in language.fence_tags:
            assert language_for_fence_tag(tag) is language
    assert language_for_fence_tag("") is None
    assert language_for_fence_tag("console") is None


def test_comment_syntax_and_fence_tag() -> None:
    assert PYTHON.comment("EVOLVE-BLOCK-START") == "# EVOLVE-BLOCK-START"
    assert CPP.comment("x") == "// x"
    assert CPP.block_comment == ("/*", "*/")
    assert CPP.fence_tag == "cpp"
    assert GENERIC.fence_tag == ""
    assert as_language("py") is PYTHON and as_language(PYTHON) is PYTHON
