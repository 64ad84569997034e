"""A task file's function called contained (`task_function.call_task_function`, `task_call.py`)
and a judged task's scorer function (`judge/scoring.Scorer`, `judge/score_call.py`) share
`file_call.py`: the reply, what was raised, a missing function named. The scripts load it by
path, so the sandbox must let them read it even where Cambrian lives in a folder the sandbox
user cannot enter."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import cambrian
from cambrian.evaluate.judge.scoring import ScoreOutcome, Scorer
from cambrian.evaluate.task_function import TaskFunctionFailed, call_task_function

TASK = """
def combine(values):
    print("chatter before the answer")
    return {"sum": sum(values)}

def fails(values):
    raise ValueError(f"no good: {values}")
"""
SCORER = """
class Scalar:  # what a numpy scalar offers
    def item(self):
        return 4.5

def score(input_text, output_text):
    if "wrong" in output_text:
        raise ValueError("wrong answer")
    if "scalar" in output_text:
        return {"score": Scalar()}
    return len(input_text) + len(output_text)
"""


def _files(folder: Path) -> tuple[Path, Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.py").write_text(textwrap.dedent(TASK))
    (folder / "scorer.py").write_text(textwrap.dedent(SCORER))
    (folder / "in.txt").write_text("abc\n")
    return folder / "task.py", folder / "scorer.py", folder / "in.txt"


async def test_a_task_function_replies_or_says_what_went_wrong(tmp_path: Path) -> None:
    task, _, _ = _files(tmp_path / "task")
    work = tmp_path / "work"
    assert await call_task_function(task, "combine", [1, 2, 3], work_dir=work) == {"sum": 6}
    with pytest.raises(TaskFunctionFailed, match=r"fails\(\) raised ValueError: no good: \[1\]"):
        await call_task_function(task, "fails", [1], work_dir=work)
    with pytest.raises(TaskFunctionFailed, match=r"ImportError: task.py defines no missing\(\)"):
        await call_task_function(task, "missing", [1], work_dir=work)


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
async def test_a_scorer_function_scores_rejects_and_converts(tmp_path: Path, warm: bool) -> None:
    _, scorer_path, case = _files(tmp_path / "task")
    scorer = Scorer(scorer_path, warm=warm)
    assert scorer.mode == "function"
    found: list[ScoreOutcome] = []
    try:
        for index, text in enumerate(["out\n", "wrong\n", "scalar\n"]):
            output = tmp_path / f"out{index}.txt"
            output.write_text(text)
            scratch = tmp_path / f"scratch{index}"
            scratch.mkdir()
            found.append(await scorer.score(case, output, scratch))
    finally:
        await scorer.close()
    assert found[0] == ScoreOutcome(score=8.0, error=None)
    assert found[1].score is None and "ValueError: wrong answer" in (found[1].error or "")
    assert found[2] == ScoreOutcome(score=4.5, error=None)


CALLS = """
import asyncio, json, sys
from pathlib import Path
from cambrian.evaluate.judge.scoring import Scorer
from cambrian.evaluate.task_function import call_task_function

async def main(folder):
    reply = await call_task_function(folder / "task.py", "combine", [2, 3],
                                     work_dir=folder / "work")
    (folder / "out.txt").write_text("out\\n")
    (folder / "scratch").mkdir()
    scorer = Scorer(folder / "scorer.py", warm=False)
    outcome = await scorer.score(folder / "in.txt", folder / "out.txt", folder / "scratch")
    print(json.dumps({"reply": reply, "score": outcome.score, "error": outcome.error}))

asyncio.run(main(Path(sys.argv[1])))
"""


def test_the_calls_work_where_the_sandbox_user_cannot_enter_cambrians_folder(
        tmp_path: Path, containment: dict[str, Any], require_containment: Any) -> None:
    require_containment("mount_namespace", "read_only_outside_scratch")
    if not str(containment.get("sandbox_user", "")).startswith("uid"):
        pytest.skip("no sandbox user of its own: every folder Cambrian can enter, it can")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    shutil.copytree(Path(cambrian.__file__).parent, private / "cambrian",
                    ignore=shutil.ignore_patterns("__pycache__"))
    task_folder = tmp_path / "task"
    _files(task_folder)
    task_folder.chmod(0o755)
    done = subprocess.run([sys.executable, "-c", CALLS, str(task_folder)], cwd=private,
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"reply": {"sum": 5}, "score": 8.0,
                                                        "error": None}
