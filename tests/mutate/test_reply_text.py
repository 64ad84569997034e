from __future__ import annotations

import pytest

from cambrian.lang.languages import CPP, PYTHON
from cambrian.mutate.patch_types import PatchError
from cambrian.mutate.patches import apply_reply
from cambrian.mutate.reply_text import extract_description, fences_for_language, find_fences


def test_fences_with_any_or_no_tag_and_surrounding_prose() -> None:
    reply = "Intro.\n```\nplain = 1\n```\nmiddle\n~~~ Python {.numberLines}\ntilde = 2\n~~~\nbye"
    fences = find_fences(reply)
    assert [(f.tag, f.body) for f in fences] == [("", "plain = 1\n"), ("python", "tilde = 2\n")]


def test_a_fence_line_with_a_tag_inside_a_block_does_not_close_it() -> None:
    reply = "````markdown\n```python\nx = 1\n```\n````\n"
    assert [f.body for f in find_fences(reply)] == ["```python\nx = 1\n```\n"]


def test_indented_fence_in_a_list_item_is_dedented() -> None:
    reply = "1. Change:\n   ```python\n   def f():\n       return 1\n   ```\n"
    assert find_fences(reply)[0].body == "def f():\n    return 1\n"


def test_closing_fence_glued_to_the_last_code_line() -> None:
    assert find_fences("```python\nx = 1\ny = 2```")[0].body == "x = 1\ny = 2\n"


def test_unclosed_fence_is_reported_as_truncation() -> None:
    with pytest.raises(PatchError) as info:
        find_fences("Here:\n```python\nx = 1\n")
    assert str(info.value) == "the reply was cut off before the closing ```"
    assert info.value.truncated


def test_fences_for_language_prefers_matching_or_untagged_blocks() -> None:
    fences = find_fences("```bash\npip install x\n```\n```py\nx = 1\n```\n```\ny = 2\n```\n")
    assert [f.body for f in fences_for_language(fences, PYTHON)] == ["x = 1\n", "y = 2\n"]
    only_c = find_fences("```c\nint x;\n```\n")
    assert [f.body for f in fences_for_language(only_c, CPP)] == ["int x;\n"]  # mislabelled: still used


@pytest.mark.parametrize(
    ("reply", "description"),
    [
        ("Use memoization.\n```python\nx\n```", "Use memoization."),
        ("\n\n**Description:** Vectorize the loop\n```\nx\n```", "Vectorize the loop"),
        ("## Switch to a heap\n\nMore words.\n```\nx\n```", "Switch to a heap"),
        ("```python\nx\n```\nAfterwards text", ""),
        ("Set `inside = 1` first. ```python\n```python\nx\n```", "Set `inside = 1` first."),
    ],
)
def test_description_is_the_first_prose_line_before_the_code(reply: str, description: str) -> None:
    assert extract_description(reply) == description


def test_long_descriptions_are_shortened() -> None:
    description = extract_description("x" * 500 + "\n```\ncode\n```")
    assert len(description) == 200 and description.endswith("…")


def test_reasoning_blocks_are_ignored() -> None:
    reply = "<think>\nMaybe:\n```python\nbad = 1\n```\n</think>\nUse two.\n```python\nx = 2\n```\n"
    result = apply_reply("full", "x = 1\n", reply, "python")
    assert result.source == "x = 2\n"
    assert result.description == "Use two."
