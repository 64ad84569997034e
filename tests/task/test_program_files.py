"""A program of several files: its one-text form (a bundle) and a task folder declaring it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cambrian.config import build_config
from cambrian.task.blocks import block_contents, check_immutable_unchanged
from cambrian.task.folder import TaskError, load_task, task_config_layer
from cambrian.task.program_files import (
    ProgramFile,
    header_path,
    is_bundle,
    join_files,
    mutable_paths,
    replace_file,
    split_files,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_bundle_heads_each_file_with_a_comment_of_its_language():
    files = [ProgramFile("geo.hpp", "#pragma once\nint f();"), ProgramFile("main.py", "x = 1\n")]
    bundle = join_files(files)
    assert bundle == "// ==> geo.hpp <==\n#pragma once\nint f();\n# ==> main.py <==\nx = 1\n"
    assert is_bundle(bundle) and header_path("/* ==> a b/c.css <== */") == "a b/c.css"
    # Each text gets a final newline, so that the next header starts a line.
    assert split_files(bundle) == [ProgramFile("geo.hpp", "#pragma once\nint f();\n"),
                                   ProgramFile("main.py", "x = 1\n")]


def test_one_file_is_the_special_case_its_text_is_the_program():
    text = "# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n"
    assert join_files([ProgramFile("program.py", text)]) == text and not is_bundle(text)
    assert split_files(text, "program.py") == [ProgramFile("program.py", text)]
    assert replace_file(text, "program.py", "y = 2\n") == "y = 2\n"


def test_a_bundle_reads_as_one_program_whose_blocks_are_its_files_blocks():
    bundle = join_files([
        ProgramFile("a.py", "import b\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n"),
        ProgramFile("fixed.py", "def helper():\n    return 2\n"),
        ProgramFile("b.py", "# EVOLVE-BLOCK-START\ny = 2\n# EVOLVE-BLOCK-END\n")])
    assert block_contents(bundle) == ["x = 1\n", "y = 2\n"]
    assert mutable_paths(split_files(bundle)) == ("a.py", "b.py")
    changed = replace_file(bundle, "b.py", "# EVOLVE-BLOCK-START\ny = 3\n# EVOLVE-BLOCK-END\n")
    check_immutable_unchanged(bundle, changed)  # the headers and the fixed file are outside
    with pytest.raises(ValueError, match="outside the EVOLVE-BLOCKs"):
        check_immutable_unchanged(bundle, replace_file(bundle, "fixed.py", "def helper(): 3\n"))


def _task(root: Path, files: list[str], **task: object):
    layer = task_config_layer(root)
    layer.setdefault("task", {}).update({"files": files, **task})
    return load_task(root, build_config([layer]))


def test_the_package_example_declares_its_files_and_its_entry(tmp_path: Path):
    root = shutil.copytree(EXAMPLES / "package_py", tmp_path / "package_py")
    task = load_task(root, build_config([task_config_layer(root)]))
    assert task.files == ("schedule/__init__.py", "schedule/order.py", "schedule/assign.py")
    assert task.program_filename == "schedule/__init__.py" and task.language.name == "python"
    files = split_files(task.initial_source or "")
    assert [f.text for f in files] == [(root / p).read_text() for p in task.files]
    # Globs, expanded in order, each file once; initial_program picks the entry.
    task = _task(root, ["schedule/order.py", "schedule/*.py"],
                 initial_program="schedule/__init__.py")
    assert task.files == ("schedule/order.py", "schedule/__init__.py", "schedule/assign.py")
    assert task.program_filename == "schedule/__init__.py"


def test_a_one_file_list_keeps_the_file_at_its_own_path(tmp_path: Path):
    root = shutil.copytree(EXAMPLES / "package_py", tmp_path / "package_py")
    task = _task(root, ["schedule/order.py"])
    assert task.files == ("schedule/order.py",) and task.program_files == ()
    assert task.initial_source == (root / "schedule/order.py").read_text()


@pytest.mark.parametrize(("change", "files", "message"), [
    (None, ["schedule/nope.py"], "matches no file"),
    (None, ["../outside.py"], "not a relative path"),
    (None, ["schedule/*.txt"], "matches no file"),
    (("schedule/order.py", "def job_order(times):\n    return []\n"),
     ["schedule/__init__.py", "schedule/order.py"], "none of task.files"),
    (("schedule/order.py", "# ==> x.py <==\n# EVOLVE-BLOCK-START\n# EVOLVE-BLOCK-END\n"),
     ["schedule/order.py", "schedule/assign.py"], "looks like the header line"),
    (("schedule/order.py", "# EVOLVE-BLOCK-START\nx = 1\n"),
     ["schedule/order.py", "schedule/assign.py"], "never closed"),
])
def test_broken_file_lists_are_explained(tmp_path: Path, change, files, message):
    root = shutil.copytree(EXAMPLES / "package_py", tmp_path / "package_py")
    if change is not None:
        (root / change[0]).write_text(change[1])
    with pytest.raises(TaskError, match=message):
        _task(root, files)


def test_the_entry_must_be_one_of_the_files(tmp_path: Path):
    root = shutil.copytree(EXAMPLES / "package_py", tmp_path / "package_py")
    with pytest.raises(TaskError, match="must be one of task.files"):
        _task(root, ["schedule/order.py", "schedule/assign.py"], initial_program="evaluate.py")


def test_the_cpp_example_has_a_header_and_a_source(tmp_path: Path):
    root = shutil.copytree(EXAMPLES / "cpp_header", tmp_path / "cpp_header")
    task = load_task(root, build_config([task_config_layer(root)]))
    assert task.files == ("solver.cpp", "knapsack.hpp") and task.language.name == "cpp"
    assert (task.initial_source or "").startswith("// ==> solver.cpp <==\n")


def test_the_improvement_step_needs_a_one_file_program(tmp_path: Path):
    root = shutil.copytree(EXAMPLES / "package_py", tmp_path / "package_py")
    layer = task_config_layer(root)
    layer["mutation"] = {"types": ["local_fix", "improve_step"]}
    with pytest.raises(TaskError, match="cannot take it"):
        load_task(root, build_config([layer]))
