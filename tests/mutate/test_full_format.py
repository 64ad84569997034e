from __future__ import annotations

import pytest

from cambrian.mutate.patches import PatchError, apply_reply

PROGRAM = """import random

# EVOLVE-BLOCK-START
def guess(n):
    return random.randint(0, n)
# EVOLVE-BLOCK-END

if __name__ == "__main__":
    print(guess(10))
"""

TWO_BLOCKS = """// EVOLVE-BLOCK-START
int a() { return 1; }
// EVOLVE-BLOCK-END
int keep() { return 0; }
// EVOLVE-BLOCK-START
int b() { return 2; }
// EVOLVE-BLOCK-END
"""


def fenced(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code}```\n"


def test_whole_program_with_markers_takes_block_contents() -> None:
    new_program = PROGRAM.replace("random.randint(0, n)", "n // 2")
    result = apply_reply("full", PROGRAM, "Binary search start.\n" + fenced(new_program), "python")
    assert result.source == new_program
    assert result.description == "Binary search start."
    assert result.n_edits == 1
    assert result.notes == []


def test_changes_outside_the_blocks_are_restored_from_the_parent_with_a_note() -> None:
    reply_program = PROGRAM.replace("random.randint(0, n)", "n // 2").replace("print(guess(10))", "print(guess(99))")
    result = apply_reply("full", PROGRAM, fenced(reply_program), "python")
    assert result.source == PROGRAM.replace("random.randint(0, n)", "n // 2")
    assert len(result.notes) == 1
    assert "ignored changes outside the EVOLVE-BLOCKs" in result.notes[0]
    assert "print(guess(99))" in result.notes[0]


def test_reply_changing_only_outside_text_is_an_error() -> None:
    with pytest.raises(PatchError, match="only changed code outside the EVOLVE-BLOCKs"):
        apply_reply("full", PROGRAM, fenced(PROGRAM.replace("import random", "import os")), "python")


def test_code_without_markers_becomes_the_single_block() -> None:
    reply = "Return the middle.\n" + fenced("def guess(n):\n    return n // 2\n")
    result = apply_reply("full", PROGRAM, reply, "python")
    assert result.source == PROGRAM.replace("    return random.randint(0, n)\n", "    return n // 2\n")


def test_whole_program_without_markers_is_unwrapped_not_nested() -> None:
    reply_program = "import random\n\ndef guess(n):\n    return n\n\nif __name__ == \"__main__\":\n    print(guess(10))\n"
    result = apply_reply("full", PROGRAM, fenced(reply_program), "python")
    assert result.source == PROGRAM.replace("random.randint(0, n)", "n")
    assert any("without marker lines" in note for note in result.notes)


def test_block_content_is_reindented_to_an_indented_block() -> None:
    parent = "class Solver:\n    # EVOLVE-BLOCK-START\n    def run(self):\n        return 1\n    # EVOLVE-BLOCK-END\n"
    reply = fenced("def run(self):\n    return 2\n")
    result = apply_reply("full", parent, reply, "python")
    assert result.source == parent.replace("return 1", "return 2")


def test_block_count_mismatch_is_an_error() -> None:
    reply = fenced("// EVOLVE-BLOCK-START\nint a() { return 3; }\n// EVOLVE-BLOCK-END\n", "cpp")
    with pytest.raises(PatchError, match="the code block has 1 EVOLVE-BLOCK\\(s\\) but the program has 2"):
        apply_reply("full", TWO_BLOCKS, reply, "cpp")


def test_several_blocks_are_taken_by_index() -> None:
    reply_program = TWO_BLOCKS.replace("return 1", "return 10").replace("return 2", "return 20")
    result = apply_reply("full", TWO_BLOCKS, fenced(reply_program, "c++"), "cpp")
    assert result.source == reply_program
    assert result.n_edits == 2


def test_several_blocks_without_markers_in_the_reply_is_an_error() -> None:
    with pytest.raises(PatchError, match="the program has 2 EVOLVE-BLOCKs; return the whole program"):
        apply_reply("full", TWO_BLOCKS, fenced("int a() { return 3; }\n", "cpp"), "cpp")


def test_cut_off_fence_is_detected() -> None:
    reply = "Faster.\n```python\ndef guess(n):\n    return n // "
    with pytest.raises(PatchError) as info:
        apply_reply("full", PROGRAM, reply, "python")
    assert str(info.value) == "the reply was cut off before the closing ```"
    assert info.value.truncated


def test_unchanged_code_is_rejected() -> None:
    with pytest.raises(PatchError, match="identical to the current program"):
        apply_reply("full", PROGRAM, fenced(PROGRAM), "python")


def test_parent_without_markers_is_replaced_wholesale() -> None:
    result = apply_reply("full", "x = 1\n", "```\nx = 2\ny = 3\n```", "python")
    assert result.source == "x = 2\ny = 3\n"


def test_missing_code_block_is_explained() -> None:
    with pytest.raises(PatchError, match="no code block found: put the complete program in one ```python"):
        apply_reply("full", PROGRAM, "def guess(n): return 1", "python")


def test_broken_markers_in_the_reply_are_reported() -> None:
    # Two START markers and no END: not the tolerated single lone marker.
    reply = fenced("# EVOLVE-BLOCK-START\ndef guess(n):\n    return 1\n# EVOLVE-BLOCK-START\n")
    with pytest.raises(PatchError, match="markers in the code block are broken"):
        apply_reply("full", PROGRAM, reply, "python")


def test_a_lone_end_or_start_marker_still_delimits_the_single_block() -> None:
    from cambrian.mutate.patches import apply_reply

    parent = "import os\n\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n\nprint(x)\n"
    only_end = "Bigger.\n```python\nx = 2\n# EVOLVE-BLOCK-END\n\nprint(x)\n```\n"
    only_start = "Bigger.\n```python\nimport os\n\n# EVOLVE-BLOCK-START\nx = 3\n```\n"
    assert apply_reply("full", parent, only_end, "python").source == parent.replace("x = 1", "x = 2")
    result = apply_reply("full", parent, only_start, "python")
    assert result.source == parent.replace("x = 1", "x = 3")
    assert any("only an EVOLVE-BLOCK-START" in note for note in result.notes)


def test_the_block_alone_with_its_markers_is_not_a_change_outside() -> None:
    block_only = "# EVOLVE-BLOCK-START\ndef guess(n):\n    return n // 2\n# EVOLVE-BLOCK-END\n"
    result = apply_reply("full", PROGRAM, fenced(block_only), "python")
    assert "return n // 2" in result.source and result.notes == []
    unchanged = "# EVOLVE-BLOCK-START\ndef guess(n):\n    return random.randint(0, n)\n# EVOLVE-BLOCK-END\n"
    with pytest.raises(PatchError, match="identical to the current program"):
        apply_reply("full", PROGRAM, fenced(unchanged), "python")


CIRCLES = """import numpy as np

# EVOLVE-BLOCK-START
def radii():
    return np.ones(3) * 0.9
# EVOLVE-BLOCK-END


def run():
    return float(np.sum(radii()))


if __name__ == "__main__":
    print(run())
"""


def test_a_block_that_runs_on_into_the_fixed_code_is_cut_where_the_block_ends() -> None:
    # The 1.5B model's habit: open the block, then write out the rest of the file.
    echoed = ("# EVOLVE-BLOCK-START\ndef radii():\n    return np.ones(3) * 1.0\n\n\n"
              "def run():\n    return float(np.sum(radii()))\n\n\nif __name__ == \"__main__\":\n"
              "    print(run())\n")
    result = apply_reply("full", CIRCLES, fenced(echoed), "python")
    assert result.source == CIRCLES.replace("* 0.9", "* 1.0")
    assert any("repeat the program's fixed code" in note for note in result.notes)
    # Only part of the fixed tail echoed: that part goes too.
    partial = echoed.split("\n\n\nif __name__")[0] + "\n"
    assert apply_reply("full", CIRCLES, fenced(partial), "python").source == result.source
    # A block whose own last lines merely resemble one fixed line stays as written.
    own = "# EVOLVE-BLOCK-START\ndef radii():\n    return np.ones(3) * 1.0\n# EVOLVE-BLOCK-END\n"
    assert apply_reply("full", CIRCLES, fenced(own), "python").notes == []
