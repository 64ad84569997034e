"""How many of the peers' example folders (OpenEvolve, ShinkaEvolve) run unchanged in Cambrian.

  .venv/bin/python benchmarks/peer_folders.py --peers DIR [--generations 2] [--json OUT]
                                              [--set-for FOLDER KEY=VALUE ...] [--only FOLDER ...]

DIR holds checkouts (or copies) of the peers' repositories: every folder under
``DIR/*/examples/`` with an ``evaluator.py`` or ``evaluate.py`` is a task folder. Each is copied
as it is and run by ``cambrian.api.start`` for a few generations with a scripted stand-in LLM
(a real OpenAI-protocol server on the loopback, ``tests/support/scripted_llm.py``) whose
replies add one harmless line to the program, so what is measured is whether Cambrian takes
the folder, evaluates its initial program and evaluates its children, not what an LLM can do.

A folder "runs unchanged" when the run starts, the initial program is evaluated as correct and
every child is evaluated (correct or not) with no infrastructure error; the note says why a
run stopped, else why the initial program or a child was judged incorrect. Novelty, meta-
scratchpad and comprehension are off (they need no folder support and cost time). The peers'
code is never part of Cambrian; the table names the folders and what happened.

``--set-for FOLDER KEY=VALUE`` adds a Cambrian setting for one folder (e.g. ``evaluation.python``
for a folder whose evaluator needs packages Cambrian's environment lacks); the table shows it.
FOLDER is the folder's name, its path under ``examples/`` or ``PEER/PATH`` (both peers have an
``erdos_min_overlap``). ``--only FOLDER`` (repeatable) measures only those folders.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.scripted_llm import ScriptedLLM

from cambrian.api import start
from cambrian.store.store import Store

QUIET = ["novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false"]
EVALUATORS = ("evaluator.py", "evaluate.py")
CODE = re.compile(r"## Current program\n```[a-z+]*\n(.*?)```", re.DOTALL)
MARKED = re.compile(r"EVOLVE-BLOCK-START[^\n]*\n(.*?)\n[^\n]*EVOLVE-BLOCK-END", re.DOTALL)


def probe_reply(messages: list[dict[str, str]], index: int) -> str:
    """Append ``_cambrian_probe = N`` after the last line of the program's (first) block."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    shown = CODE.search(user)
    program = shown.group(1) if shown else ""
    marked = MARKED.search(program)
    block = marked.group(1) if marked else program
    lines = [line for line in block.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    addition = f"_cambrian_probe = {index + 1}"
    if "SEARCH" in user.split("## Your task")[-1]:
        return (f"Record a probe value.\n<<<<<<< SEARCH\n{last}\n=======\n{last}\n{addition}\n"
                ">>>>>>> REPLACE\n")
    return f"Record a probe value.\n```python\n{block.rstrip()}\n{addition}\n```\n"


@dataclass
class Outcome:
    folder: str
    peer: str
    config: str
    settings: str
    initial: str
    children: str
    llm_calls: int
    runs_unchanged: bool
    seconds: float
    note: str


def task_folders(peers: Path) -> list[Path]:
    found = {path.parent for name in EVALUATORS for path in peers.glob(f"*/examples/**/{name}")}
    return sorted(found)


def names_of(folder: Path, peers: Path) -> set[str]:
    """What --set-for and --only may call a folder: name, path under examples/, PEER/PATH."""
    relative = folder.relative_to(peers)
    inner = "/".join(relative.parts[2:])
    return {folder.name, inner, f"{relative.parts[0]}/{inner}"}


def _config_kind(folder: Path) -> str:
    names = [p.name for p in folder.iterdir() if p.suffix in (".yaml", ".yml")]
    return ", ".join(sorted(names)) or "none"


def run_folder(folder: Path, peers: Path, generations: int, scratch: Path,
               extra: list[str]) -> Outcome:
    relative = folder.relative_to(peers)
    peer, name = relative.parts[0], "/".join(relative.parts[2:])
    slug = f"{peer}__{name.replace('/', '__')}"
    task = Path(shutil.copytree(folder, scratch / "task" / slug / folder.name))
    run_dir = scratch / "runs" / slug
    started = time.monotonic()
    with ScriptedLLM(probe_reply) as llm:
        config = ["llm.models=[" + json.dumps(llm.model_config()) + "]", *QUIET,
                  f"evolution.generations={generations}", *extra]
        try:
            evolution = start(task, run_dir=run_dir, overrides=config)
        except Exception as exc:  # noqa: BLE001 - the folder was not accepted: that is the result
            return Outcome(name, peer, _config_kind(folder), " ".join(extra), "-", "-",
                           len(llm.requests), False,
                           time.monotonic() - started, f"not started: {_one_line(exc)}")
        try:
            asyncio.run(evolution.run())
            note = ""
        except Exception as exc:  # noqa: BLE001 - e.g. RunAborted: the message is the result
            note = f"stopped: {_one_line(exc)}"
        finally:
            evolution.store.close()
        calls = len(llm.requests)
    return _summarise(name, peer, folder, run_dir, calls, time.monotonic() - started, note,
                      generations, " ".join(extra))


def _summarise(name: str, peer: str, folder: Path, run_dir: Path, calls: int, seconds: float,
               note: str, generations: int, settings: str) -> Outcome:
    store = Store.open(run_dir, read_only=True)
    try:
        rows = store.candidates.list()
        initial = next((row for row in rows if row.id == 1), None)
        children = [row for row in rows if row.id != 1]
        evaluated = [row for row in children if row.status in ("correct", "incorrect")]
        first_error = ""
        if initial is not None and initial.status != "correct":
            first_error = _one_line(initial.error or "")
        elif failed := [row for row in evaluated if row.status != "correct"]:
            # A child the evaluator judged incorrect still ran; say why (e.g. its time limit).
            first_error = "a child: " + _one_line(failed[0].error or "")
    finally:
        store.close()
    initial_text = ("-" if initial is None else
                    f"{initial.status} {initial.score:.4g}" if initial.score is not None
                    else initial.status)
    correct = sum(row.status == "correct" for row in evaluated)
    children_text = f"{len(evaluated)}/{generations} evaluated, {correct} correct"
    ok = (initial is not None and initial.status == "correct"
          and len(evaluated) >= generations and not note)
    return Outcome(name, peer, _config_kind(folder), settings, initial_text, children_text,
                   calls, ok, seconds, note or first_error)


def _one_line(error: object, limit: int = 160) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def table(outcomes: list[Outcome]) -> str:
    lines = [("| peer | folder | its config | Cambrian settings | initial program | children | "
              "LLM calls | runs unchanged | note |"), "|---|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        lines.append(f"| {o.peer} | {o.folder} | {o.config} | {o.settings or '-'} | "
                     f"{o.initial} | {o.children} | "
                     f"{o.llm_calls} | {'yes' if o.runs_unchanged else 'no'} | "
                     f"{o.note.replace('|', '/')} |")
    ran = sum(o.runs_unchanged for o in outcomes)
    lines.append(f"\n{ran} of {len(outcomes)} folders run unchanged.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", type=Path, required=True,
                        help="folder holding the peers' repositories (DIR/*/examples/...)")
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the outcomes as JSON")
    parser.add_argument("--set-for", nargs=2, action="append", default=[],
                        metavar=("FOLDER", "KEY=VALUE"), help="a setting for one folder")
    parser.add_argument("--only", action="append", default=[], metavar="FOLDER",
                        help="measure only this folder (repeatable)")
    args = parser.parse_args()
    folders = [folder for folder in task_folders(args.peers)
               if not args.only or names_of(folder, args.peers) & set(args.only)]
    if not folders:
        parser.error(f"no task folder under {args.peers}/*/examples/"
                     + (f" named {', '.join(args.only)}" if args.only else ""))
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="cambrian-peers-") as scratch:
        for folder in folders:
            extra = [setting for name, setting in args.set_for
                     if name in names_of(folder, args.peers)]
            outcome = run_folder(folder, args.peers, args.generations, Path(scratch), extra)
            print(f"{outcome.peer}/{outcome.folder}: "
                  f"{'runs unchanged' if outcome.runs_unchanged else 'does not'} "
                  f"({outcome.seconds:.0f} s) {outcome.note}", file=sys.stderr, flush=True)
            outcomes.append(outcome)
    print(table(outcomes))
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2))


if __name__ == "__main__":
    main()
