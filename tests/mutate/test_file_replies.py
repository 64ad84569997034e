"""Replies to a program of several files: cut at the lines naming a file, each part applied in
the reply's format to its file, unnamed edits finding their file by themselves; the prompt
showing each file (the fixed ones by their signatures when the window is tight); the checks
that read one file's code run per changed file."""

from __future__ import annotations

from pathlib import Path

import pytest

from cambrian.config import PromptConfig
from cambrian.lang.languages import CPP, PYTHON
from cambrian.mutate.file_checks import syntax_error_files
from cambrian.mutate.file_replies import named_file, reply_sections, reply_shape
from cambrian.mutate.patch_types import PatchError
from cambrian.mutate.patches import apply_reply
from cambrian.mutate.prompts import ProgramView, PromptBuilder
from cambrian.search.algorithms.code_merge import merge_programs
from cambrian.task.folder import Task
from cambrian.task.program_files import ProgramFile, join_files, replace_file, split_files

INIT = ProgramFile("pkg/__init__.py", "from .a import f\nfrom .b import g\n\n\n"
                                      "def solve(x):\n    return g(f(x))\n")
A = ProgramFile("pkg/a.py", "# EVOLVE-BLOCK-START\ndef f(x):\n    return x + 1\n"
                            "# EVOLVE-BLOCK-END\n")
B = ProgramFile("pkg/b.py", "import math\n\n# EVOLVE-BLOCK-START\ndef g(y):\n    return y * 2\n"
                            "\n\ndef h(y):\n    return y\n# EVOLVE-BLOCK-END\n")
PACKAGE = join_files([INIT, A, B])
PATHS = ["pkg/__init__.py", "pkg/a.py", "pkg/b.py"]


def files_of(source: str) -> dict[str, str]:
    return {f.path: f.text for f in split_files(source)}


@pytest.mark.parametrize("line", ["pkg/b.py", "### pkg/b.py", "`pkg/b.py`", "File: pkg/b.py",
                                  "**pkg/b.py**", "# ==> pkg/b.py <==", "b.py:", "pkg/b.py:"])
def test_a_file_is_named_on_a_line_of_its_own(line: str):
    assert named_file(line, PATHS) == "pkg/b.py"


def test_names_inside_code_or_an_edit_do_not_cut_the_reply():
    reply = ("Change both\npkg/a.py\n<<<<<<< SEARCH\npkg/b.py\n=======\nx\n>>>>>>> REPLACE\n"
             "```python pkg/b.py\nprint('pkg/a.py')\npkg/a.py\n```\n")
    sections = reply_sections(reply, PATHS)
    assert [(s.path, s.text.count("\n")) for s in sections] == [
        (None, 1), ("pkg/a.py", 5), ("pkg/b.py", 4)]
    assert reply_sections(reply, []) == [type(sections[0])(None, reply)]  # one file: no cut


def test_a_diff_reply_changes_two_files():
    reply = ("Add two, double twice\npkg/a.py\n<<<<<<< SEARCH\n    return x + 1\n=======\n"
             "    return x + 2\n>>>>>>> REPLACE\npkg/b.py\n<<<<<<< SEARCH\n    return y * 2\n"
             "=======\n    return y * 4\n>>>>>>> REPLACE\n")
    patch = apply_reply("diff", PACKAGE, reply, PYTHON)
    files = files_of(patch.source)
    assert "return x + 2" in files["pkg/a.py"] and "return y * 4" in files["pkg/b.py"]
    assert files["pkg/__init__.py"] == INIT.text and patch.n_edits == 2
    assert patch.description == "Add two, double twice"


def test_an_unnamed_edit_finds_the_one_file_it_matches():
    reply = "<<<<<<< SEARCH\n    return y * 2\n=======\n    return y * 3\n>>>>>>> REPLACE\n"
    assert "return y * 3" in files_of(apply_reply("diff", PACKAGE, reply, PYTHON).source)["pkg/b.py"]
    twice = join_files([INIT, A, ProgramFile("pkg/b.py", A.text.replace("def f", "def g"))])
    ambiguous = "<<<<<<< SEARCH\n    return x + 1\n=======\n    return 0\n>>>>>>> REPLACE\n"
    with pytest.raises(PatchError, match="ambiguous"):
        apply_reply("diff", twice, ambiguous, PYTHON)
    named = "pkg/b.py\n" + ambiguous  # naming the file settles it
    assert "return 0" in files_of(apply_reply("diff", twice, named, PYTHON).source)["pkg/b.py"]


def test_a_file_without_blocks_cannot_change_and_an_error_names_the_file():
    reply = ("pkg/__init__.py\n<<<<<<< SEARCH\n    return g(f(x))\n=======\n    return 0\n"
             ">>>>>>> REPLACE\n")
    with pytest.raises(PatchError, match="pkg/__init__.py has no EVOLVE-BLOCK"):
        apply_reply("diff", PACKAGE, reply, PYTHON)
    with pytest.raises(PatchError, match="^in pkg/a.py: the edit: the SEARCH lines were not found"):
        apply_reply("diff", PACKAGE, "pkg/a.py\n<<<<<<< SEARCH\nnope\n=======\nyes\n"
                                     ">>>>>>> REPLACE\n", PYTHON)


def test_full_rewrites_per_file_leave_the_other_files_as_they_are():
    reply = ("Rewrite g\npkg/b.py\n```python\n# EVOLVE-BLOCK-START\ndef g(y):\n    return y ** 2\n"
             "\n\ndef h(y):\n    return -y\n# EVOLVE-BLOCK-END\n```\n")
    files = files_of(apply_reply("full", PACKAGE, reply, PYTHON).source)
    assert "y ** 2" in files["pkg/b.py"] and files["pkg/b.py"].startswith("import math\n")
    assert files["pkg/a.py"] == A.text
    fenced = "```python pkg/a.py\n# EVOLVE-BLOCK-START\ndef f(x):\n    return 7\n# EVOLVE-BLOCK-END\n```\n"
    assert "return 7" in files_of(apply_reply("full", PACKAGE, fenced, PYTHON).source)["pkg/a.py"]


def test_a_function_reply_replaces_the_function_in_its_own_file():
    reply = "Faster h\n```python\ndef h(y):\n    return y + 0\n```\n"
    files = files_of(apply_reply("function", PACKAGE, reply, PYTHON).source)
    assert "return y + 0" in files["pkg/b.py"] and files["pkg/a.py"] == A.text
    helper = "pkg/a.py\n```python\ndef helper(x):\n    return x\n```\n"  # a new one, where named
    assert "def helper" in files_of(apply_reply("function", PACKAGE, helper, PYTHON).source)[
        "pkg/a.py"]


def test_a_reply_cannot_forge_a_file_header():
    reply = ("pkg/a.py\n<<<<<<< SEARCH\n    return x + 1\n=======\n    return x\n"
             "# ==> pkg/c.py <==\n>>>>>>> REPLACE\n")
    with pytest.raises(PatchError, match="looks like a file header"):
        apply_reply("diff", PACKAGE, reply, PYTHON)


def test_the_reply_shape_names_the_files_with_blocks():
    assert reply_shape(PACKAGE) == (1, ("pkg/a.py", "pkg/b.py"))
    assert reply_shape(A.text) == (1, ())


def test_a_cpp_source_is_syntax_checked_beside_its_header():
    header = ProgramFile("geo.hpp", "#pragma once\n// EVOLVE-BLOCK-START\n"
                                    "inline int twice(int x) { return 2 * x; }\n"
                                    "// EVOLVE-BLOCK-END\n")
    source = ProgramFile("main.cpp", '#include "geo.hpp"\n// EVOLVE-BLOCK-START\n'
                                     "int run() { return twice(3); }\n// EVOLVE-BLOCK-END\n")
    parent = join_files([source, header])
    fine = replace_file(parent, "main.cpp", source.text.replace("twice(3)", "twice(4)"))
    assert syntax_error_files(parent, fine, CPP) is None
    broken = replace_file(parent, "geo.hpp", header.text.replace("2 * x;", "2 * x"))
    assert syntax_error_files(parent, broken, CPP).startswith("geo.hpp: line 3")
    missing = replace_file(parent, "main.cpp", source.text.replace("twice(3)", "thrice(3)"))
    assert "main.cpp: line 3" in syntax_error_files(parent, missing, CPP)


def test_a_merge_takes_each_parents_changed_file():
    ones = replace_file(PACKAGE, "pkg/a.py", A.text.replace("x + 1", "x + 5"))
    other = replace_file(PACKAGE, "pkg/b.py", B.text.replace("y * 2", "y * 5"))
    merged = files_of(merge_programs(PACKAGE, ones, other, python=True) or "")
    assert "x + 5" in merged["pkg/a.py"] and "y * 5" in merged["pkg/b.py"]


def _builder() -> PromptBuilder:
    task = Task(root=Path("."), name="t", initial_path=None, initial_source=PACKAGE,
                language=PYTHON, evaluator_path=Path("evaluate.py"), contract="module",
                problem_statement=None, description=None, direction="maximize",
                program_files=tuple(PATHS), entry_file="pkg/__init__.py")
    return PromptBuilder(task, PromptConfig())


def test_the_prompt_shows_each_file_and_summarises_the_fixed_ones_when_tight():
    fixed = ProgramFile("pkg/__init__.py", INIT.text + "".join(
        f"\n\ndef helper_{i}(x):\n    return x + {i}  # a long helper of the fixed file\n"
        for i in range(60)))
    parent = ProgramView(1, join_files([fixed, A, B]), 1.0, True)
    builder = _builder()

    def count(text: str) -> int:
        return len(text) // 4

    roomy = builder.build(kind="diff", fmt="diff", parent=parent, budget_tokens=100_000,
                          count_tokens=count)[1].content
    assert "### pkg/__init__.py (cannot change)\n```python\nfrom .a import f" in roomy
    assert "def helper_59(x):\n    return x + 59" in roomy
    assert "### pkg/b.py\n```python\nimport math" in roomy
    assert "Before each edit, write the path of its file alone on a line" in roomy
    tight = builder.build(kind="diff", fmt="diff", parent=parent,
                          budget_tokens=count(roomy) - 200, count_tokens=count)[1].content
    assert "### pkg/__init__.py (cannot change; its definitions)" in tight
    assert "def helper_3(x):" in tight and "return x + 3" not in tight
    assert "return y * 2" in tight  # the files that can change are always whole


HEADER = ProgramFile("knap.hpp", "#pragma once\nstruct Item { long value; long weight; };\n"
                                 "// EVOLVE-BLOCK-START\ninline double priority(const Item& item) {\n"
                                 "    return item.value;\n}\n// EVOLVE-BLOCK-END\n")
SOURCE = ProgramFile("main.cpp", '#include "knap.hpp"\n// EVOLVE-BLOCK-START\n'
                                 "double best(const Item& item) {\n    return priority(item);\n}\n"
                                 "// EVOLVE-BLOCK-END\n")


def test_a_function_sent_under_another_files_name_goes_where_it_is_defined():
    """The 1.5B's most frequent slip on the C++ example: the header's function sent under the
    source's path, which used to add a second definition there."""
    program = join_files([SOURCE, HEADER])
    reply = ("Rank by value per weight\nmain.cpp\n```cpp\ninline double priority(const Item& item) "
             "{\n    return 1.0 * item.value / item.weight;\n}\n```\n")
    patch = apply_reply("function", program, reply, CPP)
    files = files_of(patch.source)
    assert "item.value / item.weight" in files["knap.hpp"] and files["main.cpp"] == SOURCE.text
    assert syntax_error_files(program, patch.source, CPP) is None
    helper = "main.cpp\n```cpp\nint helper(int x) {\n    return x;\n}\n```\n"  # a new one stays
    assert "int helper" in files_of(apply_reply("function", program, helper, CPP).source)[
        "main.cpp"]
