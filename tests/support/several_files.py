"""A short run of the package example (examples/package_py, three files) with a scripted model
whose replies change one or two files: what the tests of several-file programs inspect."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from cambrian.api import start
from support.scripted_llm import ScriptedLLM

PACKAGE_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "package_py"

TWO_FILES = """Sort the longest jobs first and place each on the least loaded machine
schedule/order.py
<<<<<<< SEARCH
    return list(range(len(times)))
=======
    return sorted(range(len(times)), key=lambda job: -times[job])
>>>>>>> REPLACE
schedule/assign.py
<<<<<<< SEARCH
    machine_of = [0] * len(times)
    for position, job in enumerate(order):
        machine_of[job] = position % machines
=======
    machine_of = [0] * len(times)
    loads = [0.0] * machines
    for job in order:
        machine = min(range(machines), key=lambda m: loads[m])
        machine_of[job] = machine
        loads[machine] += times[job]
>>>>>>> REPLACE
"""

REWRITE = """Place each job on the least loaded machine
schedule/assign.py
```python
# EVOLVE-BLOCK-START
def assign_jobs(times, order, machines):
    loads = [0.0] * machines
    machine_of = [0] * len(times)
    for job in order:
        machine_of[job] = min(range(machines), key=lambda m: loads[m])
        loads[machine_of[job]] += times[job]
    return machine_of
# EVOLVE-BLOCK-END
```
"""

ONE_FILE = """Place the shortest jobs first
schedule/order.py
<<<<<<< SEARCH
    return list(range(len(times)))
=======
    return sorted(range(len(times)), key=lambda job: times[job])
>>>>>>> REPLACE
"""


class PackageReplies:
    """The first diff asked for changes both files, later ones one; a rewrite asked for gets
    one file's block. The mutation prompts are kept."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.diffs = 0

    def __call__(self, messages: list[dict[str, str]], index: int) -> str:
        if "## Current program" not in messages[-1]["content"]:
            return "APPROACHES:\n1. longest processing time first\n"  # the problem brief
        self.prompts.append(messages[-1]["content"])
        if "SEARCH" not in self.prompts[-1].split("## Your task")[-1]:
            return REWRITE
        self.diffs += 1
        return TWO_FILES if self.diffs == 1 else ONE_FILE


def run_package(tmp_path: Path, generations: int = 2, *extra: str) -> tuple[Path, PackageReplies]:
    """The run folder of a short scripted run of the package example, and its replies."""
    task = shutil.copytree(PACKAGE_EXAMPLE, tmp_path / "task")
    replies = PackageReplies()
    with ScriptedLLM(replies) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            f"evolution.generations={generations}",
            "llm.models=[" + json.dumps(llm.model_config()) + "]",
            "novelty.enabled=false", "meta.enabled=false", "evolution.max_parallel_evaluations=1",
            "mutation.types=[local_fix]", *extra])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    return tmp_path / "run", replies
