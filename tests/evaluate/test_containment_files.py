"""Hostile candidates against the file system: task folder, /tmp, file size; output caps."""

from __future__ import annotations

import errno
import json
import shutil
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from cambrian.evaluate.containment import ContainmentPolicy
from cambrian.evaluate.runner import EvaluatorSettings
from cambrian.evaluate.sandbox import run_sandboxed
from cambrian.evaluate.task_files import TaskFilesChanged

# Imports the candidate (which runs its hostile code at import) and scores it 1.0.
EVALUATOR = """
import importlib.util

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return {"combined_score": 1.0}
"""

HOSTILE_WRITES = """
import json
FAKE = "def evaluate(program_path):\\n    return {{'combined_score': 1e9}}\\n"
outcome = {{}}
for name, path in {targets!r}.items():
    try:
        with open(path, "w") as handle:
            handle.write(FAKE)
        outcome[name] = "written"
    except OSError as error:
        outcome[name] = error.errno
print("OUTCOME " + json.dumps(outcome))
"""


def outcome_of(stdout: str) -> dict[str, object]:
    line = next(line for line in stdout.splitlines() if line.startswith("OUTCOME "))
    return json.loads(line.removeprefix("OUTCOME "))


async def test_candidate_cannot_write_the_task_folder_or_tmp(
    make_evaluator, write_file: Callable[[str, str], Path], task_dir: Path, work_dir: Path,
    require_containment,
) -> None:
    require_containment("read_only_outside_scratch")
    evaluator_path = write_file("evaluator.py", EVALUATOR)
    original = evaluator_path.read_text()
    escape = Path(f"/tmp/cambrian-escape-{uuid.uuid4().hex}.py")
    targets = {
        "evaluator": str(evaluator_path),
        "task_folder": str(task_dir / "planted.py"),
        "tmp": str(escape),
        "scratch": "mine.txt",  # its own scratch folder, the working directory: allowed
    }
    evaluator = make_evaluator(EvaluatorSettings(evaluator_path=evaluator_path))
    hostile = await evaluator.evaluate(HOSTILE_WRITES.format(targets=targets), work_dir)

    assert hostile.status == "ok", hostile.error
    outcome = outcome_of(hostile.stdout)
    assert outcome["scratch"] == "written"
    for name in ("evaluator", "task_folder", "tmp"):
        # EROFS (read-only mount), or EACCES/ENOENT (a folder the sandbox user cannot see).
        assert outcome[name] in (errno.EROFS, errno.EACCES, errno.ENOENT), (name, outcome)
    assert evaluator_path.read_text() == original
    assert not (task_dir / "planted.py").exists()
    assert not escape.exists()
    # The next child is scored by the real evaluator, from a fresh verified copy.
    honest = await evaluator.evaluate("VALUE = 1\n", work_dir)
    assert honest.status == "ok" and honest.combined_score == 1.0


REPLACE_RESULTS = """
import os
os.rename("results", "moved")
os.symlink({victim!r}, "results")
"""


async def test_a_results_folder_replaced_by_a_link_is_never_followed(
    make_evaluator, write_file: Callable[[str, str], Path], tmp_path: Path, work_dir: Path,
) -> None:
    """Cambrian (root, outside the sandbox) cleans and reads the results folder after the
    evaluation: a candidate that swaps it for a link to another folder must not make
    Cambrian delete the links there or read its files."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "kept-link").symlink_to("/etc/hostname")
    (victim / "module_result.json").write_text('{"result": {"combined_score": 1e9}}')
    evaluator = make_evaluator(EvaluatorSettings(evaluator_path=write_file("evaluator.py",
                                                                           EVALUATOR)))
    hostile = await evaluator.evaluate(REPLACE_RESULTS.format(victim=str(victim)), work_dir)

    assert (victim / "kept-link").is_symlink()
    assert hostile.status != "ok" and hostile.combined_score != 1e9
    assert not (work_dir / "results").is_symlink()


async def test_a_task_file_changed_after_the_build_stops_evaluation(
    make_evaluator, write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    evaluator_path = write_file("evaluator.py", EVALUATOR)
    data = write_file("data.txt", "42\n")
    evaluator = make_evaluator(EvaluatorSettings(evaluator_path=evaluator_path))
    assert (await evaluator.evaluate("VALUE = 1\n", work_dir)).status == "ok"
    # The scratch folder held verified, read-only copies of the task's files.
    assert (work_dir / "data.txt").read_text() == "42\n"
    assert (work_dir / "evaluator.py").stat().st_mode & 0o222 == 0

    evaluator_path.write_text(EVALUATOR.replace("1.0", "1e9"))
    with pytest.raises(TaskFilesChanged, match="evaluator.py changed"):
        await evaluator.evaluate("VALUE = 1\n", work_dir)
    evaluator_path.write_text(textwrap.dedent(EVALUATOR).lstrip("\n"))
    data.unlink()
    with pytest.raises(TaskFilesChanged, match="data.txt was removed"):
        await evaluator.evaluate("VALUE = 1\n", work_dir)


async def test_evaluator_reads_sibling_task_files_from_its_working_directory(
    make_evaluator, write_file: Callable[[str, str], Path], task_dir: Path, work_dir: Path
) -> None:
    (task_dir / "data").mkdir()
    write_file("data/answer.txt", "7\n")
    path = write_file("evaluator.py", """
        from pathlib import Path

        def evaluate(program_path):
            beside = (Path(__file__).parent / "data" / "answer.txt").read_text()
            relative = Path("data/answer.txt").read_text()
            return {"combined_score": float(beside) + float(relative)}
    """)
    result = await make_evaluator(EvaluatorSettings(evaluator_path=path)).evaluate(
        "VALUE = 1\n", work_dir
    )
    assert result.status == "ok", result.error
    assert result.combined_score == 14.0


async def test_huge_file_write_stops_at_the_file_size_limit(
    tmp_path: Path, require_containment
) -> None:
    require_containment("rlimit_fsize")
    scratch = tmp_path / "scratch"
    limit = 4 * 1024 * 1024
    code = """
import errno, os
written = 0
try:
    with open("big.bin", "wb") as handle:
        for _ in range(64):
            handle.write(b"x" * 1024 * 1024)
            handle.flush()
            written += 1024 * 1024
except OSError as error:
    print("STOPPED", error.errno, written)
else:
    print("NOT STOPPED", written)
"""
    result = await run_sandboxed(
        [sys.executable, "-c", code], cwd=scratch, env=None, timeout_s=60,
        memory_limit_mb=1024, scratch_dir=scratch,
        containment=ContainmentPolicy(max_file_bytes=limit),
    )
    assert result.returncode == 0, result.stderr
    verdict, code_text, _ = result.stdout.split()
    assert (verdict, int(code_text)) == ("STOPPED", errno.EFBIG)
    assert (scratch / "big.bin").stat().st_size <= limit


async def test_dropped_output_bytes_and_the_cap_are_recorded_in_the_result(
    make_evaluator, write_file: Callable[[str, str], Path], work_dir: Path
) -> None:
    path = write_file("evaluator.py", """
        import sys

        def evaluate(program_path):
            sys.stdout.write("o" * 50_000)
            sys.stderr.write("e" * 30_000)
            return {"combined_score": 1.0}
    """)
    settings = EvaluatorSettings(evaluator_path=path, max_output_bytes=10_000)
    result = await make_evaluator(settings).evaluate("VALUE = 1\n", work_dir)
    assert result.status == "ok", result.error
    assert result.extra["stdout_truncated_bytes"] == 40_000
    assert result.extra["stderr_truncated_bytes"] == 20_000
    assert result.extra["output_cap_bytes"] == 10_000
    assert len(result.stdout) < 10_200


HIDDEN_PROBE = """
import json, os, sys
seen = {}
for name, path in json.loads(sys.argv[1]).items():
    try:
        seen[name] = open(path).read().strip() if os.path.isfile(path) else sorted(os.listdir(path))
    except OSError as error:
        seen[name] = error.errno
with open("mine.txt", "w") as handle:
    handle.write("x")
print("OUTCOME " + json.dumps(seen))
"""


async def test_hidden_folders_show_only_what_the_command_needs(require_containment) -> None:
    require_containment("mount_namespace")
    # A folder every user may read (pytest's tmp_path would be out of the sandbox user's
    # reach already), holding a held-out file, the file the command is given, and its scratch.
    root = Path(tempfile.mkdtemp(prefix="cambrian-hidden-"))
    try:
        root.chmod(0o755)
        (root / "task" / "private").mkdir(parents=True)
        (root / "task" / "private" / "case.in").write_text("held out")
        (root / "task" / "given.in").write_text("given")
        scratch = root / "run" / "evaluation"
        scratch.mkdir(parents=True)
        (root / "run" / "run.sqlite").write_text("store")
        paths = {"held_out": str(root / "task" / "private" / "case.in"),
                 "task": str(root / "task"), "run": str(root / "run"),
                 "store": str(root / "run" / "run.sqlite"), "given": str(root / "task" / "given.in")}
        result = await run_sandboxed(
            [sys.executable, "-c", HIDDEN_PROBE, json.dumps(paths), str(root / "task" / "given.in")],
            cwd=scratch, env=None, timeout_s=60, memory_limit_mb=1024, scratch_dir=scratch,
            hidden_paths=[root / "task", root / "run"],
        )
        assert result.returncode == 0, result.stderr
        seen = outcome_of(result.stdout)
        assert seen["held_out"] == errno.ENOENT and seen["store"] == errno.ENOENT
        assert seen["task"] == ["given.in"]  # what its arguments name, alone
        assert seen["run"] == ["evaluation"]  # its scratch folder, alone
        assert seen["given"] == "given"
        assert (scratch / "mine.txt").read_text() == "x"
        assert (root / "task" / "private" / "case.in").read_text() == "held out"  # untouched
    finally:
        shutil.rmtree(root, ignore_errors=True)
