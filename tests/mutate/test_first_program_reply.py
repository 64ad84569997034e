"""Reading a first program out of an LLM reply, adding EVOLVE-BLOCK markers when it has none."""

from __future__ import annotations

import re

import pytest

from cambrian.lang.languages import CPP, GENERIC, PYTHON
from cambrian.mutate.first_program import DraftError, add_evolve_markers, program_from_reply
from cambrian.task.blocks import block_contents, parse_regions


def test_python_imports_stay_above_the_block():
    source = "import math\nfrom random import Random\n\n\ndef run():\n    return math.pi\n"
    marked = add_evolve_markers(source, PYTHON)
    assert marked == ("import math\nfrom random import Random\n# EVOLVE-BLOCK-START\n\n\n"
                      "def run():\n    return math.pi\n# EVOLVE-BLOCK-END\n")
    assert parse_regions(marked).has_markers


def test_a_parenthesised_import_is_not_split_by_the_marker():
    source = "from os.path import (\n    join,\n)\nVALUE = 1\n"
    marked = add_evolve_markers(source, PYTHON)
    assert marked.startswith("# EVOLVE-BLOCK-START\nfrom os.path import (\n")
    compile(marked, "<marked>", "exec")


def test_cpp_includes_and_namespace_stay_above_the_block():
    source = ("#include <bits/stdc++.h>\nusing namespace std;\n\nint main() {\n"
              "    cout << 1 << endl;\n}")  # no final newline
    marked = add_evolve_markers(source, CPP)
    assert marked.startswith(
        "#include <bits/stdc++.h>\nusing namespace std;\n// EVOLVE-BLOCK-START\n")
    assert marked.endswith("}\n// EVOLVE-BLOCK-END\n")
    assert "int main() {" in "".join(block_contents(marked))


def test_a_program_that_is_all_header_or_of_an_unknown_language_is_wrapped_whole():
    assert add_evolve_markers("import math\n", PYTHON) == (
        "# EVOLVE-BLOCK-START\nimport math\n# EVOLVE-BLOCK-END\n")
    assert add_evolve_markers("print 1\n", GENERIC) == (
        "# EVOLVE-BLOCK-START\nprint 1\n# EVOLVE-BLOCK-END\n")


def test_reply_with_markers_is_kept_as_written():
    program = "import sys\n# EVOLVE-BLOCK-START\nX = 1\n# EVOLVE-BLOCK-END\nprint(X)\n"
    source, description, added = program_from_reply(
        f"Start with a constant.\n```python\n{program}```\n", PYTHON)
    assert (source, description, added) == (program, "Start with a constant.", False)


def test_the_longest_block_in_the_language_is_the_program():
    reply = ("Plan:\n```\nstep 1\n```\nProgram:\n```python\nVALUE = 2\n\ndef run():\n"
             "    return VALUE\n```\nRun it with:\n"
             "```bash\npython program.py --with many flags\n```\n")
    source, _, added = program_from_reply(reply, PYTHON)
    assert added and "def run():" in source and "step 1" not in source and "flags" not in source


@pytest.mark.parametrize(("reply", "message"), [
    ("I would write a greedy program.",
     "no code block found; reply with the whole program in one ```python code block"),
    ("```python\nx = 1\n", "cut off"),
    ("```python\n# EVOLVE-BLOCK-START\nx = 1\n```\n", "EVOLVE-BLOCK markers are malformed"),
    ("```python\n\n```\n", "the code block is empty"),
])
def test_unusable_replies_say_what_is_wrong(reply: str, message: str):
    with pytest.raises(DraftError, match=re.escape(message)):
        program_from_reply(reply, PYTHON)
