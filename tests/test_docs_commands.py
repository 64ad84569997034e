"""The commands of the README and of the tutorials run as written, so they cannot rot.

A fenced ``bash`` or ``python`` block in README.md or docs/tutorials/ is preceded by a marker:
``<!-- docs-test: run -->`` (this test runs it) or ``<!-- docs-test: skip REASON -->`` (it needs
what a test cannot have: hours of the embedded model, a cluster of machines, a server left
running). A block without a marker fails the test, so a new command is either run or skipped
for a stated reason.

The blocks of one document run in order, in one fresh folder holding a copy of ``examples/``,
with the virtualenv's ``cambrian`` and ``python`` first on PATH. An API model named in them
(``--model gpt-4o-mini``) is served by a local OpenAI-compatible server (``OPENAI_BASE_URL``)
whose scripted replies change one number of the parent (tests/support/any_task_llm.py): the
commands, the runs, the store and the CLI are real; only the model's replies are scripted.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.any_task_llm import numeric_edit
from support.scripted_llm import ScriptedLLM

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs" / "tutorials").glob("*.md"))]
MARKER = re.compile(r"<!--\s*docs-test:\s*(run|skip)\b\s*(.*?)\s*-->")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
RUNNABLE = {"bash", "python"}


@dataclass(frozen=True)
class Block:
    document: Path
    line: int
    language: str
    code: str
    action: str | None  # "run", "skip", or None when unmarked
    reason: str


def blocks(document: Path) -> list[Block]:
    text = document.read_text()
    found = []
    for match in FENCE.finditer(text):
        language = match.group(1)
        if language not in RUNNABLE:
            continue
        before = text[:match.start()].rstrip().splitlines()
        marker = MARKER.fullmatch(before[-1].strip()) if before else None
        found.append(Block(document, text.count("\n", 0, match.start()) + 1, language,
                           match.group(2), marker.group(1) if marker else None,
                           marker.group(2) if marker else ""))
    return found


def _name(document: Path) -> str:
    return document.relative_to(ROOT).as_posix()


def test_every_command_block_is_run_or_skipped_for_a_reason():
    problems = []
    for document in DOCUMENTS:
        for block in blocks(document):
            where = f"{_name(document)}:{block.line}"
            if block.action is None:
                problems.append(f"{where}: a {block.language} block without a "
                                "<!-- docs-test: run --> or <!-- docs-test: skip REASON --> marker")
            elif block.action == "skip" and len(block.reason) < 10:
                problems.append(f"{where}: a skipped block must say why")
    assert not problems, "\n".join(problems)


def test_the_readme_and_every_tutorial_run_something():
    for document in DOCUMENTS:
        assert any(b.action == "run" for b in blocks(document)), (
            f"{_name(document)} has no block the tests run")


@pytest.mark.parametrize("document", DOCUMENTS, ids=_name)
def test_the_documented_commands_run(document, tmp_path):
    runnable = [b for b in blocks(document) if b.action == "run"]
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("__pycache__"))
    bin_dir = Path(sys.executable).parent
    with ScriptedLLM(numeric_edit) as llm:
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               "OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-docs-test",
               "PYTHONPATH": ""}
        for block in runnable:
            if block.language == "python":
                script = tmp_path / f"block_{block.line}.py"
                script.write_text(block.code)
                command = [str(bin_dir / "python"), str(script)]
            else:
                command = ["bash", "-euo", "pipefail", "-c", block.code]
            result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True,
                                    text=True, timeout=400, stdin=subprocess.DEVNULL)
            assert result.returncode == 0, (
                f"{_name(document)}:{block.line} exited {result.returncode}:\n{block.code}\n"
                f"--- output ---\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
