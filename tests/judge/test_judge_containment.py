"""Hostile judged candidates and hostile scorers, judged for real: what they can read and write.

A candidate must not see the held-out cases (nor any other file of the task or the run) by any
path: absolute, walking up from its working folder, through /proc, or at compile time. The
task's scorer is task code and runs contained: no write outside its scratch folder, no key.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from judge_helpers import write_task

from cambrian.evaluate.judge.factory import build_judged_evaluator

PRIVATE_MARK = "HELDOUT_7f3a9c"
STORE_MARK = "STOREROW_5b1e2d"

# Rejects every output, quoting it: whatever the program read ends up in the case's message,
# the field the store keeps and the next prompt shows.
ECHO_SCORER = """
    def score(input_text, output_text):
        return {"error": "saw " + " ".join(output_text.split())[:400]}
"""

# Tries every way up to the held-out cases it can think of, prints what it could read.
PRYING_PROGRAM = """
import glob, os
task, run = {task!r}, {run!r}
paths = [task + "/private/case.in", task + "/private/case.out", run + "/run.sqlite"]
paths += glob.glob(task + "/**", recursive=True) + glob.glob(run + "/**", recursive=True)
here = os.getcwd()
for _ in range(8):
    here = os.path.dirname(here)
    paths += glob.glob(here + "/*/private/*") + glob.glob(here + "/*.sqlite")
for proc in glob.glob("/proc/[0-9]*"):
    paths += [proc + "/cwd/private/case.in", proc + "/root" + task + "/private/case.in"]
read = []
for path in paths:
    try:
        with open(path, errors="replace") as handle:
            read.append(handle.read(200))
    except OSError:
        pass
print("probed", len(paths), "read", " ".join(read))
"""


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder every user may enter and read, as a project folder usually is (pytest's own
    tmp_path lies in a folder only its owner may enter, which would hide it by itself)."""
    folder = Path(tempfile.mkdtemp(prefix="cambrian-open-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def private_task(root: Path) -> Path:
    """A task judged on case files: one public case, two held-out files (input, answer)."""
    task = write_task(root, {"score.py": ECHO_SCORER})
    (task / "public").mkdir()
    (task / "public" / "case.in").write_text("1\n")
    (task / "private").mkdir()
    (task / "private" / "case.in").write_text(f"{PRIVATE_MARK} = 1;\n")
    (task / "private" / "case.out").write_text(f"{PRIVATE_MARK}\n")
    return task


def judge(language: str) -> dict:
    return {"language": language, "public_cases": "public", "private_cases": "private",
            "time_limit_s": 2.0, "wall_time_limit_s": 10.0, "memory_limit_mb": 512}


async def test_a_candidate_reads_neither_the_held_out_cases_nor_the_run(
        open_folder: Path, monkeypatch: pytest.MonkeyPatch):
    task = private_task(open_folder / "task")
    run = open_folder / "run"
    run.mkdir()
    (run / "run.sqlite").write_text(STORE_MARK)
    monkeypatch.chdir(task)  # Cambrian's own working folder: /proc/PID/cwd of this process
    evaluator = build_judged_evaluator(task, judge("python"), run_dir=run)
    program = PRYING_PROGRAM.format(task=str(task), run=str(run))
    try:
        result = await evaluator.evaluate(program, run / "evaluations" / "2")
    finally:
        await evaluator.close()

    stored = json.dumps(result.to_dict())
    assert "probed" in result.error, result.error  # it ran, and its output was quoted
    assert PRIVATE_MARK not in stored
    assert STORE_MARK not in stored


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
async def test_a_compiler_include_cannot_read_the_held_out_cases(open_folder: Path):
    task = private_task(open_folder / "task")
    evaluator = build_judged_evaluator(task, judge("cpp"), run_dir=open_folder / "run")
    program = (f'#include "{task}/private/case.in"\n'
               "#include <cstdio>\nint main() { std::puts(\"0\"); }\n")
    try:
        result = await evaluator.evaluate(program, open_folder / "run" / "evaluations" / "2")
    finally:
        await evaluator.close()

    assert result.extra["verdict"] == "CE", result.error
    assert "No such file" in result.error
    assert PRIVATE_MARK not in json.dumps(result.to_dict())


HOSTILE_SCORER = """
    import os

    def score(input_text, output_text):
        outcome = []
        for target in ({escape!r}, "planted.txt", os.environ["HOME"] + "/mine.txt"):
            try:
                with open(target, "w") as handle:
                    handle.write("x")
                outcome.append(target + " written")
            except OSError as error:
                outcome.append(target + " refused " + str(error.errno))
        keys = sorted(value for name, value in os.environ.items() if "KEY" in name)
        return {{"error": "scorer ran; " + "; ".join(outcome) + "; keys " + repr(keys)}}
"""


async def test_the_scorer_runs_contained_without_keys(open_folder: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch):
    secret = "sk-unconfigured-0123456789abcdef"
    monkeypatch.setenv("SOME_SERVICE_API_KEY", secret)
    escape = open_folder / "escaped.txt"
    task = write_task(tmp_path / "task", {"score.py": HOSTILE_SCORER.format(escape=str(escape))})
    (task / "public").mkdir()
    (task / "public" / "case.in").write_text("1\n")
    evaluator = build_judged_evaluator(task, {**judge("python"), "private_cases": None},
                                       run_dir=tmp_path / "run")
    try:
        result = await evaluator.evaluate("print(1)\n", tmp_path / "run" / "evaluations" / "2")
    finally:
        await evaluator.close()

    message = result.extra["cases"][0]["message"]
    assert "scorer ran" in message, message
    assert not escape.exists() and not (task / "planted.txt").exists()
    assert f"{escape} refused" in message and "planted.txt refused" in message
    assert "mine.txt written" in message  # its own scratch folder, its HOME
    assert secret not in message and "keys []" in message
    assert os.environ["SOME_SERVICE_API_KEY"] == secret  # still Cambrian's


async def test_the_generator_runs_contained(open_folder: Path):
    """The case generator is task code too: it writes nowhere but its own scratch folder."""
    from cambrian.config.judge import CaseRef
    from cambrian.evaluate.judge.cases import CaseStore

    task = open_folder / "task"
    task.mkdir()
    escape = open_folder / "escaped-by-generator.txt"
    (task / "gen.py").write_text(
        "import sys\n"
        f"for path in ({str(escape)!r}, {str(task / 'planted.txt')!r}):\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "    except OSError:\n"
        "        pass\n"
        "print(int(sys.argv[1]) * 2)\n")
    store = CaseStore(open_folder / "cache", task / "gen.py")
    path = await store.input_path(CaseRef("public-3", seed=3))
    assert path.read_text().strip() == "6"
    assert not escape.exists() and not (task / "planted.txt").exists()
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".generate")] == []
