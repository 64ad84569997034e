from __future__ import annotations

import pytest

from cambrian.task.blocks import (
    BlockError,
    block_contents,
    check_immutable_unchanged,
    immutable_text,
    parse_marker,
    parse_regions,
    replace_block_contents,
)

PYTHON_PROGRAM = """import math

# EVOLVE-BLOCK-START
def area(r):
    return math.pi * r * r
# EVOLVE-BLOCK-END

print(area(2))
"""

CPP_PROGRAM = """#include <vector>
// EVOLVE-BLOCK-START
int best(int x) {
    return x;
}
// EVOLVE-BLOCK-END
int helper() { return 1; }
/* EVOLVE-BLOCK-START: second */
int second() { return 2; }
/* EVOLVE-BLOCK-END */
"""


def test_python_hash_markers_give_the_inner_line_range() -> None:
    regions = parse_regions(PYTHON_PROGRAM)
    assert regions.has_markers
    assert len(regions.blocks) == 1
    block = regions.blocks[0]
    assert (block.start_marker, block.end_marker) == (2, 5)
    assert (block.content_start, block.content_end) == (3, 5)
    assert block_contents(PYTHON_PROGRAM) == ["def area(r):\n    return math.pi * r * r\n"]


def test_cpp_line_and_block_comment_markers_and_start_label() -> None:
    regions = parse_regions(CPP_PROGRAM)
    assert [(b.content_start, b.content_end) for b in regions.blocks] == [(2, 5), (8, 9)]
    assert regions.blocks[1].label == "second"
    assert block_contents(CPP_PROGRAM) == [
        "int best(int x) {\n    return x;\n}\n",
        "int second() { return 2; }\n",
    ]
    assert regions.is_mutable(3) and not regions.is_mutable(6)


@pytest.mark.parametrize(
    "line",
    [
        "<!-- EVOLVE-BLOCK-START -->",
        "  # EVOLVE-BLOCK-START",
        "## EVOLVE-BLOCK-START",
        "/// EVOLVE-BLOCK-START",
        "-- EVOLVE-BLOCK-START",
        "; EVOLVE-BLOCK-START",
        "% EVOLVE-BLOCK-START",
        "! EVOLVE-BLOCK-START",
        "(* EVOLVE-BLOCK-START *)",
        "/*EVOLVE-BLOCK-START*/",
        "EVOLVE-BLOCK-START",
        "# EVOLVE-BLOCK-START: hot loop",
        "# EVOLVE-BLOCK-START (tuning)",
    ],
)
def test_start_markers_in_any_common_comment_syntax(line: str) -> None:
    marker = parse_marker(line)
    assert marker is not None and marker.kind == "start"


@pytest.mark.parametrize(
    "line",
    [
        'print("EVOLVE-BLOCK-START")',
        "x = 1  # EVOLVE-BLOCK-START",
        "# EVOLVE-BLOCK-STARTED",
        "# EVOLVE-BLOCK-END now",
        "# evolve-block-start",
    ],
)
def test_lines_that_merely_mention_the_token_are_not_markers(line: str) -> None:
    assert parse_marker(line) is None


def test_html_style_markers() -> None:
    source = "<html>\n<!-- EVOLVE-BLOCK-START -->\n<p>hi</p>\n<!-- EVOLVE-BLOCK-END -->\n</html>\n"
    assert block_contents(source) == ["<p>hi</p>\n"]
    assert immutable_text(source) == (
        "<html>\n<!-- EVOLVE-BLOCK-START -->\n<!-- EVOLVE-BLOCK-END -->\n</html>\n"
    )


def test_several_blocks_replace_contents_keeps_everything_else_byte_for_byte() -> None:
    updated = replace_block_contents(CPP_PROGRAM, ["int best(int x) { return 2 * x; }", ""])
    assert updated == (
        "#include <vector>\n// EVOLVE-BLOCK-START\nint best(int x) { return 2 * x; }\n"
        "// EVOLVE-BLOCK-END\nint helper() { return 1; }\n/* EVOLVE-BLOCK-START: second */\n"
        "/* EVOLVE-BLOCK-END */\n"
    )
    assert immutable_text(updated) == immutable_text(CPP_PROGRAM)


def test_replace_block_contents_rejects_a_wrong_count() -> None:
    with pytest.raises(BlockError, match="got 1 block contents for a program with 2"):
        replace_block_contents(CPP_PROGRAM, ["x"])


def test_start_without_end_names_its_line() -> None:
    source = "a = 1\n# EVOLVE-BLOCK-START\nb = 2\n"
    with pytest.raises(BlockError, match="EVOLVE-BLOCK-START at line 2 is never closed") as info:
        parse_regions(source)
    assert info.value.line == 2


def test_end_with_trailing_text_is_pointed_out_when_the_block_stays_open() -> None:
    source = "# EVOLVE-BLOCK-START\nb = 2\n# EVOLVE-BLOCK-END here\n"
    with pytest.raises(BlockError, match="line 3 mentions an EVOLVE-BLOCK marker but is not a marker line"):
        parse_regions(source)


def test_end_without_start_names_its_line() -> None:
    source = "a = 1\n\n# EVOLVE-BLOCK-END\n"
    with pytest.raises(BlockError, match="EVOLVE-BLOCK-END at line 3 has no matching EVOLVE-BLOCK-START"):
        parse_regions(source)


def test_nested_start_names_both_lines() -> None:
    source = "# EVOLVE-BLOCK-START\na = 1\n# EVOLVE-BLOCK-START\nb = 2\n# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-END\n"
    with pytest.raises(BlockError, match="nested EVOLVE-BLOCK-START at line 3: the block opened at line 1"):
        parse_regions(source)


def test_source_without_markers_is_one_mutable_region() -> None:
    source = "def f():\n    return 1\n"
    regions = parse_regions(source)
    assert not regions.has_markers
    assert [(b.content_start, b.content_end, b.start_marker) for b in regions.blocks] == [(0, 2, None)]
    assert block_contents(source) == [source]
    assert immutable_text(source) == ""
    assert replace_block_contents(source, ["x = 2\n"]) == "x = 2\n"
    check_immutable_unchanged(source, "anything at all\n")


def test_check_immutable_accepts_changes_inside_blocks_only() -> None:
    child = PYTHON_PROGRAM.replace("math.pi * r * r", "3.14159 * r ** 2\n    # faster?")
    check_immutable_unchanged(PYTHON_PROGRAM, child)


def test_check_immutable_names_the_first_changed_line() -> None:
    child = PYTHON_PROGRAM.replace("print(area(2))", "print(area(3))")
    with pytest.raises(BlockError) as info:
        check_immutable_unchanged(PYTHON_PROGRAM, child)
    assert "line 8 is `print(area(3))` but must stay `print(area(2))`" in str(info.value)
    assert info.value.line == 8


def test_check_immutable_reports_added_and_removed_lines() -> None:
    with pytest.raises(BlockError, match="line 2 `import os` was added"):
        check_immutable_unchanged(PYTHON_PROGRAM, PYTHON_PROGRAM.replace("import math\n", "import math\nimport os\n"))
    with pytest.raises(BlockError, match="line 8 `print\\(area\\(2\\)\\)` was removed"):
        check_immutable_unchanged(PYTHON_PROGRAM, PYTHON_PROGRAM.replace("print(area(2))\n", ""))


def test_check_immutable_rejects_a_lost_block() -> None:
    child = PYTHON_PROGRAM.replace("# EVOLVE-BLOCK-START\n", "").replace("# EVOLVE-BLOCK-END\n", "")
    with pytest.raises(BlockError, match="must keep its 1 EVOLVE-BLOCK"):
        check_immutable_unchanged(PYTHON_PROGRAM, child)


def test_crlf_line_endings_are_kept() -> None:
    source = "x = 0\r\n# EVOLVE-BLOCK-START\r\ny = 1\r\n# EVOLVE-BLOCK-END\r\n"
    assert block_contents(source) == ["y = 1\r\n"]
    assert replace_block_contents(source, ["y = 2\r\n"]) == source.replace("y = 1", "y = 2")


def test_parsing_the_same_source_again_gives_the_same_regions_and_the_same_error() -> None:
    """parse_regions keeps the last sources' regions (a proposal parses its parent and child at
    each check); they are immutable, and a malformed source raises every time."""
    source = "a = 1\n# EVOLVE-BLOCK-START\nb = 2\n# EVOLVE-BLOCK-END\n"
    first = parse_regions(source)
    assert parse_regions(source) == first and parse_regions("".join(source)) == first
    assert isinstance(first.lines, tuple) and isinstance(first.blocks, tuple)
    broken = "# EVOLVE-BLOCK-START\nb = 2\n"
    for _ in range(2):
        with pytest.raises(BlockError, match="never closed"):
            parse_regions(broken)
