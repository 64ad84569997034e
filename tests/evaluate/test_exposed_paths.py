"""What the sandbox exposes read-only (`containment.exposed_paths`): the interpreter's folders,
the command's absolute path arguments and PYTHONPATH's entries, in their absolute and real
forms, never a path inside the scratch folder. The forms of a path outside the scratch folder
are resolved once and kept; one missing at first is looked for again."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cambrian.evaluate.containment import exposed_paths


def test_forms_outside_the_scratch_folder_are_exposed_and_those_inside_never(
    tmp_path: Path,
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    real = tmp_path / "lib_real"
    real.mkdir()
    link = tmp_path / "lib"
    link.symlink_to(real)
    program = scratch / "program.py"
    program.write_text("")
    argv = [sys.executable, str(program), str(link)]
    first = exposed_paths(argv, {}, [], scratch)
    assert str(link) in first and str(real) in first
    assert not [path for path in first if path.startswith(str(scratch))]
    assert exposed_paths(argv, {}, [], scratch) == first  # the kept forms: the same answer


def test_a_path_missing_at_first_is_exposed_once_it_exists(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    late = tmp_path / "late_lib"
    env = {"PYTHONPATH": str(late)}
    assert str(late) not in exposed_paths([sys.executable], env, [], scratch)
    late.mkdir()
    assert str(late) in exposed_paths([sys.executable], env, [], scratch)


def test_a_link_inside_the_scratch_folder_is_resolved_again_each_time(tmp_path: Path) -> None:
    """A scratch folder's paths are new at every evaluation: what a link there points to is
    never kept (the next evaluation's link may point elsewhere)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    targets = [tmp_path / "first", tmp_path / "second"]
    for target in targets:
        target.mkdir()
    link = scratch / "data"
    for target in targets:
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
        exposed = exposed_paths([sys.executable, str(link)], {}, [], scratch)
        assert str(target) in exposed and os.fspath(link) not in exposed
