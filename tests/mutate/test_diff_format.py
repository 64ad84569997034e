from __future__ import annotations

import pytest

from cambrian.mutate.patches import PatchError, apply_reply

PROGRAM = """import math

# EVOLVE-BLOCK-START
def total(xs):
    result = 0
    for x in xs:
        result += x

    return result
# EVOLVE-BLOCK-END


def report(xs):
    result = 0
    return total(xs)
"""


def edit(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def apply_diff(reply: str, source: str = PROGRAM) -> str:
    return apply_reply("diff", source, reply, "python").source


def test_exact_match_is_replaced_and_prose_and_fences_are_ignored() -> None:
    reply = (
        "Use a generator sum.\n\nHere is the change:\n```python\n"
        + edit("    for x in xs:\n        result += x\n", "    result = sum(x for x in xs)\n")
        + "```\nThat should be faster.\n"
    )
    result = apply_reply("diff", PROGRAM, reply, "python")
    assert result.source == PROGRAM.replace(
        "    for x in xs:\n        result += x\n", "    result = sum(x for x in xs)\n"
    )
    assert result.description == "Use a generator sum."
    assert result.n_edits == 1


def test_trailing_whitespace_differences_still_match() -> None:
    reply = edit("    for x in xs:   \n        result += x\t\n", "    for x in xs:\n        result -= x\n")
    assert apply_diff(reply) == PROGRAM.replace("result += x", "result -= x")


def test_uniform_indentation_shift_matches_and_reindents_the_replacement() -> None:
    # The model dropped the function-body indentation in both SEARCH and REPLACE.
    reply = edit("for x in xs:\n    result += x\n", "for x in xs:\n    if x > 0:\n        result += x\n")
    assert apply_diff(reply) == PROGRAM.replace(
        "        result += x\n", "        if x > 0:\n            result += x\n"
    )


def test_deeper_indentation_in_search_is_shifted_back() -> None:
    reply = edit("        return result\n", "        return result * 2\n")
    assert apply_diff(reply) == PROGRAM.replace("    return result\n", "    return result * 2\n")


def test_blank_lines_in_search_are_tolerated() -> None:
    # The program has a blank line before `return`, the SEARCH does not.
    reply = edit("        result += x\n    return result\n", "        result += x\n    return -result\n")
    assert apply_diff(reply) == PROGRAM.replace("        result += x\n\n    return result\n", "        result += x\n    return -result\n")
    # ...and extra blank lines in the SEARCH that the program lacks are tolerated as well.
    reply = edit("    result = 0\n\n    for x in xs:\n", "    result = 1\n    for x in xs:\n")
    assert apply_diff(reply) == PROGRAM.replace("    result = 0\n    for", "    result = 1\n    for")


def test_ambiguous_match_is_rejected_with_line_numbers_and_nothing_is_applied() -> None:
    source = "# EVOLVE-BLOCK-START\nx = 0\nx += 1\nx += 1\n# EVOLVE-BLOCK-END\n"
    with pytest.raises(PatchError) as info:
        apply_diff(edit("x += 1\n", "x += 2\n"), source)
    message = str(info.value)
    assert "ambiguous" in message and "lines 3, 4" not in message
    assert "line 3, line 4" in message
    assert "add surrounding lines" in message


def test_match_in_both_regions_applies_the_one_inside_the_block() -> None:
    # `result = 0` appears inside the block (line 5) and outside it (line 14).
    assert apply_diff(edit("    result = 0\n", "    result = 10\n")) == PROGRAM.replace(
        "def total(xs):\n    result = 0", "def total(xs):\n    result = 10"
    )


def test_no_match_quotes_the_search_and_shows_the_closest_program_lines() -> None:
    reply = edit("    for item in xs:\n        result += item\n", "    pass\n")
    with pytest.raises(PatchError) as info:
        apply_diff(reply)
    message = str(info.value)
    assert "not found" in message
    assert "    for item in xs:" in message
    assert "    6 |     for x in xs:" in message
    assert "    7 |         result += x" in message
    assert not info.value.truncated


def test_edit_outside_the_block_is_rejected() -> None:
    with pytest.raises(PatchError, match="line 15, which is outside the EVOLVE-BLOCK; edits outside EVOLVE-BLOCK are not allowed"):
        apply_diff(edit("    return total(xs)\n", "    return 0\n"))


@pytest.mark.parametrize(
    "replace",
    [
        "    return 0\n",  # drops the marker
        "    return 0\n# EVOLVE-BLOCK-END (edited)\n",  # changes the marker
        "    return 0\n# EVOLVE-BLOCK-END\n\n\ndef report(xs):\n    return 0\n",  # changes code after it
    ],
)
def test_edit_spanning_a_marker_is_rejected(replace: str) -> None:
    reply = edit("    return result\n# EVOLVE-BLOCK-END\n\n\ndef report(xs):\n", replace)
    with pytest.raises(PatchError) as info:
        apply_diff(reply)
    assert "lines 9-13, which cross the marker `# EVOLVE-BLOCK-END` on line 10" in str(info.value)
    assert "edits outside EVOLVE-BLOCK are not allowed" in str(info.value)
    assert "(lines 4-9) can change" in str(info.value)


def test_a_marker_used_as_unchanged_context_is_accepted_with_a_note() -> None:
    reply = edit("    return result\n# EVOLVE-BLOCK-END\n", "    return 0\n# EVOLVE-BLOCK-END\n")
    result = apply_reply("diff", PROGRAM, reply, "python")
    assert result.source == PROGRAM.replace("    return result\n", "    return 0\n")
    assert result.notes == ["the edit: the SEARCH crossed an EVOLVE-BLOCK marker but left it unchanged"]


def test_replacement_may_not_add_markers() -> None:
    with pytest.raises(PatchError, match="must not contain the marker line"):
        apply_diff(edit("    return result\n", "    return result\n# EVOLVE-BLOCK-START\n"))


def test_empty_search_inserts_at_the_end_of_the_last_block() -> None:
    source = "a = 1\n# EVOLVE-BLOCK-START\nb = 2\n# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-START\nc = 3\n# EVOLVE-BLOCK-END\nd = 4\n"
    assert apply_diff(edit("", "e = 5\nf = 6\n"), source) == source.replace("c = 3\n", "c = 3\ne = 5\nf = 6\n")


def test_empty_search_without_markers_appends_to_the_file() -> None:
    assert apply_diff(edit("", "y = 2\n"), "x = 1") == "x = 1\ny = 2\n"


def test_no_op_edit_is_rejected() -> None:
    with pytest.raises(PatchError, match="no-op edit"):
        apply_diff(edit("    return result\n", "    return result\n"))


def test_edits_apply_in_order_and_later_ones_see_earlier_results() -> None:
    reply = (
        "Rename then extend.\n"
        + edit("    result = 0\n    for x in xs:\n", "    acc = 0\n    for x in xs:\n")
        + "\n"
        + edit("    acc = 0\n", "    acc = 0  # running sum\n")
    )
    result = apply_reply("diff", PROGRAM, reply, "python")
    assert result.n_edits == 2
    assert "    acc = 0  # running sum\n    for x in xs:\n" in result.source
    assert result.source.count("acc") == 1


def test_a_failing_second_edit_fails_the_whole_reply_with_its_number() -> None:
    reply = edit("    result = 0\n    for x in xs:\n", "    acc = 0\n    for x in xs:\n") + edit("    nothing\n", "    x\n")
    with pytest.raises(PatchError, match="^edit 2 of 2: the SEARCH lines were not found"):
        apply_diff(reply)


def test_reply_without_edits_explains_the_format() -> None:
    with pytest.raises(PatchError, match="no SEARCH/REPLACE edit found") as info:
        apply_diff("I would change the loop.")
    assert "<<<<<<< SEARCH" in str(info.value)


def test_missing_divider_is_reported() -> None:
    with pytest.raises(PatchError, match="no '=======' line"):
        apply_diff("<<<<<<< SEARCH\n    return result\n>>>>>>> REPLACE\n")


def test_reply_cut_off_inside_an_edit_is_marked_truncated() -> None:
    with pytest.raises(PatchError) as info:
        apply_diff("<<<<<<< SEARCH\n    return result\n=======\n    return res")
    assert info.value.truncated
    assert "cut off" in str(info.value)


def test_unclosed_fence_around_edits_is_truncation() -> None:
    reply = "```\n" + edit("    return result\n", "    return 0\n")
    with pytest.raises(PatchError, match="the reply was cut off before the closing ```") as info:
        apply_diff(reply)
    assert info.value.truncated


def test_fences_inside_the_sections_and_line_number_prefixes_are_tolerated() -> None:
    reply = "<<<<<<< SEARCH\n```python\n    9 |     return result\n```\n=======\n```python\n    return 0\n```\n>>>>>>> REPLACE\n"
    result = apply_reply("diff", PROGRAM, reply, "python")
    assert result.source == PROGRAM.replace("    return result\n", "    return 0\n")
    assert any("line-number prefixes" in note for note in result.notes)


def test_crlf_program_keeps_its_line_endings() -> None:
    source = "# EVOLVE-BLOCK-START\r\nx = 1\r\ny = 2\r\n# EVOLVE-BLOCK-END\r\n"
    assert apply_diff(edit("x = 1\n", "x = 3\nz = 4\n"), source) == (
        "# EVOLVE-BLOCK-START\r\nx = 3\r\nz = 4\r\ny = 2\r\n# EVOLVE-BLOCK-END\r\n"
    )


def test_closing_fence_without_replace_marker_still_ends_the_edit() -> None:
    reply = "```python\n<<<<<<< SEARCH\n    return result\n=======\n    return 0\n```\n"
    result = apply_reply("diff", PROGRAM, reply, "python")
    assert result.source == PROGRAM.replace("    return result\n", "    return 0\n")
    assert result.notes == ["edit 1 had no '>>>>>>> REPLACE' line; its closing ``` ended it"]
