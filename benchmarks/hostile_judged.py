"""Hostile judged tasks for benchmarks/hostile.py: a candidate going for the held-out cases,
and a task whose scorer goes for the run's keys and the file system, each through a real
`cambrian run` of a small judged task (Python programs, case files, a scripted model).

The run must finish normally (exit 0) and what was tried must not have happened: no held-out
case in anything the run keeps (its store, its files), nothing written outside the scorer's
scratch folder, no key, configured or not, anywhere in the run.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hostile_runner import SECRET, Case, cambrian, clean, settings
from support.scripted_llm import ScriptedLLM, incrementing

from cambrian.store.store import Store

HELD_OUT = "HELD-OUT-CASE-7f3a9c"
# A key in Cambrian's environment that no model of the run names: only its name says "key".
UNCONFIGURED = "sk-unconfigured-4d5e6f0123456789"

INITIAL = """# EVOLVE-BLOCK-START
VALUE = 1
# EVOLVE-BLOCK-END
print(VALUE)
"""

# Scores the printed integer; anything else is a wrong answer that quotes what was printed
# (as contest scorers do), so whatever the program read would reach the stored message.
ECHO_SCORER = """
def score(input_text, output_text):
    tokens = output_text.split()
    if len(tokens) == 1 and tokens[0].isdigit():
        return {"score": int(tokens[0])}
    return {"error": "expected one integer, got: " + " ".join(tokens)[:400]}
"""

# The task's own scorer turned hostile: it writes outside its scratch folder, and rejects every
# child quoting the keys of its environment (the initial program scores, so the run goes on).
HOSTILE_SCORER = """
import os

def score(input_text, output_text):
    for path in ("WORK/escaped-by-scorer.txt", "/tmp/cambrian-hostile-scorer.txt"):
        try:
            with open(path, "w") as handle:
                handle.write("out")
        except OSError:
            pass
    if output_text.split() == ["1"]:
        return {"score": 1}
    keys = [value for name, value in os.environ.items() if "KEY" in name]
    return {"error": "scorer ran; keys " + " ".join(keys)}
"""

# Every way up to the held-out cases a candidate might try: absolute paths, walking up from
# its working folder, /proc/PID/cwd and /proc/PID/root of every process it can see.
PRYING = """
import glob, os
paths = glob.glob("WORK/task/**", recursive=True) + glob.glob("WORK/run/**", recursive=True)
here = os.getcwd()
for _ in range(10):
    here = os.path.dirname(here)
    paths += glob.glob(here + "/*/private/*") + glob.glob(here + "/*/*/private/*")
for proc in glob.glob("/proc/[0-9]*"):
    paths += [proc + "/cwd/WORK/task/private/case.in", proc + "/root/WORK/task/private/case.in"]
read = []
for path in paths:
    try:
        with open(path, errors="replace") as handle:
            read.append(path.replace("WORK/", "") + "=" + handle.read(60).strip())
    except OSError:
        pass
print("probed", len(paths), "read", " ".join(read)[:300])
"""


def write_judged_task(root: Path, scorer: str) -> Path:
    """One public case file, one held-out case (input and answer) and the given scorer."""
    for folder, name, text in (("public", "case.in", "1\n"), ("private", "case.in", HELD_OUT),
                               ("private", "case.out", HELD_OUT)):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / name).write_text(text + "\n")
    (root / "initial.py").write_text(INITIAL)
    (root / "problem.md").write_text("# Print\nPrint one integer; the score is its value.\n")
    (root / "score.py").write_text(textwrap.dedent(scorer))
    config = {"task": {"name": "hostile_judged", "direction": "maximize",
                       "initial_program": "initial.py"},
              "judge": {"language": "python", "public_cases": "public",
                        "private_cases": "private", "time_limit_s": 2.0,
                        "wall_time_limit_s": 8.0, "memory_limit_mb": 512}}
    (root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root


def first_reply(program: str) -> Callable[[list[dict[str, str]], int], str]:
    """The first proposal gets ``program`` as the block; later ones count up."""

    def reply(messages: list[dict[str, str]], index: int) -> str:
        if index == 0:
            return (f"Try this\n```python\n# EVOLVE-BLOCK-START\n{program.strip()}\nVALUE = 2\n"
                    "# EVOLVE-BLOCK-END\nprint(VALUE)\n```\n")
        return incrementing(messages, index)

    return reply


def run_judged(work: Path, scorer: str, program: str,
               env: dict[str, str] | None = None) -> tuple[Any, Store]:
    task = write_judged_task(work / "task", scorer.replace("WORK", str(work)))
    with ScriptedLLM(first_reply(program.replace("WORK", str(work)))) as llm:
        result = cambrian("run", str(task), "-o", str(work / "run"), "-g", "3",
                          *settings(llm.model_config(api_key_env="LLM_KEY")),
                          env={"LLM_KEY": SECRET, **(env or {})})
    return result, Store.open(work / "run")


def found_in_run(work: Path, *texts: str) -> str | None:
    """The first file of the run folder holding one of `texts`."""
    for path in (work / "run").rglob("*"):
        if path.is_file() and any(text.encode() in path.read_bytes() for text in texts):
            return str(path)
    return None


def shown(work: Path, *commands: list[str]) -> str:
    """What `cambrian status` and `cambrian show` print for the run."""
    return "".join(cambrian(*command).stdout for command in commands)


def candidate_reads_held_out(work: Path) -> tuple[bool, str]:
    result, store = run_judged(work, ECHO_SCORER, PRYING)
    try:
        if result.returncode != 0 or not clean(result):
            return False, f"exit {result.returncode}: {result.stderr.strip()[-300:]}"
        child = store.candidates.get(2)
        if "probed" not in (child.source or "") or "probed" not in (child.error or ""):
            return False, f"candidate 2 is not the prying program ({child.status}: {child.error})"
        message = child.error or ""
    finally:
        store.close()
    where = found_in_run(work, HELD_OUT)
    printed = shown(work, ["status", str(work / "run")], ["show", str(work / "run"), "2"])
    if where or HELD_OUT in printed:
        return False, f"the held-out case is in {where or 'what status/show print'}"
    return True, f"run exit 0; candidate 2 {message.split('got: ')[-1][:120]}"


def scorer_escapes(work: Path) -> tuple[bool, str]:
    escapes = (work / "escaped-by-scorer.txt", Path("/tmp/cambrian-hostile-scorer.txt"))
    result, store = run_judged(work, HOSTILE_SCORER, "", env={"OTHER_SERVICE_API_KEY":
                                                               UNCONFIGURED})
    try:
        if result.returncode != 0 or not clean(result):
            return False, f"exit {result.returncode}: {result.stderr.strip()[-300:]}"
        rejected = [c for c in store.candidates.list() if "scorer ran" in (c.error or "")]
    finally:
        store.close()
    written = [str(path) for path in escapes if path.exists()]
    for path in escapes:
        path.unlink(missing_ok=True)
    if not rejected:
        return False, "the scorer never rejected a child (the check could not fail)"
    if written:
        return False, f"the scorer wrote {', '.join(written)}"
    where = found_in_run(work, SECRET, UNCONFIGURED)
    if where:
        return False, f"a key is in {where}"
    message = rejected[0].error or ""
    return True, (f"run exit 0; nothing written outside; {len(rejected)} children rejected, "
                  f"the scorer saw: {message.split('scorer ran; ')[-1][:80]!r}")


JUDGED_CASES = [
    Case("candidate reads a judged task's held-out cases", candidate_reads_held_out),
    Case("judged task's scorer writes outside scratch and reads keys", scorer_escapes),
]

__all__ = ["JUDGED_CASES"]
