"""Does the model's own editing carry the search? Runs a suite of tasks with plain starts (no
planted slack) for a number of LLM calls and prints, per task and seed:

  best score after 10/20/40 LLM calls (every call counts: proposals, judges, scratchpad...),
  best score after the run's evaluations, the gain split between LLM children, crossover
  children and tune trials, mutation calls yielding an evaluable / correct / improving child
  (better than its parent), the steps of the best-so-far chain with whether each changed the
  code's structure, a few statements ("minor") or only numbers, and wall time.

  .venv/bin/python benchmarks/discovery.py [--tasks circle_packing,function_minimum,...]
        [--calls 40] [--seeds 0,1] [--label NAME] [--set KEY=VALUE ...] [--mode defaults]

``--mode defaults`` (issue 31) runs what a user who brings a task folder gets: no hint of any
kind. Each example's config keeps only its budgets and limits (``task``, ``evolution``,
``evaluation``, ``judge``, ``budget``: no moves, intents, scores or operators), and two folders
written in other frameworks' shapes join the four examples (``benchmarks/task_folders/``:
OpenEvolve's circle packing with its plain ring start, and its function minimisation), copied
as they are. The prepared folders live in LABEL/tasks/.

Runs live in benchmarks/results/discovery/LABEL/TASK-sSEED; a run that exists is resumed until
it has spent its calls (so a long benchmark continues in a later session), then analysed.
Figures go to stdout and to LABEL/summary.json; `--analyse-only` skips running.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import re
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

import yaml

from cambrian.core.events import IntentBanditSnapshot, MovesDerived, StepScoreChecked
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.store.store import Store
from cambrian.task.blocks import BlockError, block_contents

ROOT = Path(__file__).resolve().parents[1]
TASKS = {
    "circle_packing": ROOT / "examples" / "circle_packing",
    "function_minimum": ROOT / "examples" / "function_minimum",
    "tsp_tour": ROOT / "examples" / "tsp_tour",
    "heuristic_contest": ROOT / "examples" / "heuristic_contest",
}
PEER_TASKS = {
    "openevolve_circle_packing": ROOT / "benchmarks" / "task_folders" / "openevolve_circle_packing",
    "openevolve_function_minimization":
        ROOT / "benchmarks" / "task_folders" / "openevolve_function_minimization",
}
DEFAULTS_TASKS = {**TASKS, **PEER_TASKS}
KEPT_SECTIONS = ("task", "evolution", "evaluation", "judge", "budget")  # budgets and limits
CHECKPOINTS = (10, 20, 40)
MINOR_LINES = 3
NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass
class Step:
    """One improvement of the best-so-far score."""

    candidate: int
    parent: int | None
    operator: str
    score: float
    gain: float
    change: str  # "structure", "minor", "constants" or "-" (no parent to compare with)
    description: str


@dataclass
class RunFigures:
    task: str
    seed: int
    llm_calls: int
    mutation_calls: int
    evaluations: int
    initial: float | None
    best: float | None
    best_after_calls: dict[int, float | None]
    gain_by_source: dict[str, float]
    calls_evaluable: int
    calls_correct: int
    calls_improving: int
    chain: list[Step] = field(default_factory=list)
    wall_s: float = 0.0
    # intent (or the patch kind when the schedule is off) -> proposals, evaluated, correct,
    # better than the parent
    by_intent: dict[str, list[int]] = field(default_factory=dict)
    # Issue 31: the moves the model derived, the checks of its step scores (accepted, reason)
    # and the intent bandit's latest shares per island.
    derived_moves: list[str] = field(default_factory=list)
    score_checks: list[list[Any]] = field(default_factory=list)
    intent_shares: dict[int, dict[str, float]] = field(default_factory=dict)

    @property
    def structural_llm_step(self) -> bool:
        return any(s.change == "structure" and s.operator not in ("tune", "init")
                   for s in self.chain)


def source_kind(operator: str) -> str:
    if operator == "tune":
        return "tune"
    if operator == "cross":
        return "crossover"
    return "llm"


def mutable_text(source: str) -> str:
    try:
        return "\n".join(block_contents(source))
    except BlockError:
        return source


class _Normalise(ast.NodeTransformer):
    """Numbers become 0 and arithmetic with a number disappears (``x * 1.5`` is ``x``): what is
    left is the program's structure."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.Constant(0) if isinstance(node.value, (int, float)) else node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if _is_number(node.right):
            return node.left
        if _is_number(node.left):
            return node.right
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        return node.operand if _is_number(node.operand) else node


def _is_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float))


def structure_lines(source: str) -> list[str]:
    """The mutable code with numbers and comments normalised away, one statement per line."""
    text = mutable_text(source)
    try:
        tree = _Normalise().visit(ast.parse(textwrap.dedent(text)))
        return ast.unparse(ast.fix_missing_locations(tree)).splitlines()
    except SyntaxError:  # not Python (the contest's C++): numbers masked, comments dropped
        lines = (NUMBER.sub("#", line).strip() for line in text.splitlines())
        return [line for line in lines if line and not line.startswith(("#", "//"))]


def change_kind(parent: str | None, child: str | None) -> str:
    """"constants" when the child differs from its parent only in numbers (and arithmetic with
    numbers), "minor" when at most MINOR_LINES statements changed besides, else "structure"."""
    if parent is None or child is None:
        return "-"
    before, after = structure_lines(parent), structure_lines(child)
    changed = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in
                  difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes()
                  if tag != "equal")
    return "constants" if changed == 0 else "minor" if changed <= MINOR_LINES else "structure"


def analyse(run_dir: Path, task: str, seed: int, wall_s: float) -> RunFigures:
    store = Store.open(run_dir, read_only=True)
    try:
        objective = Objective.of(store.runs.info().direction)
        rows = {row.id: row for row in store.candidates.list()}
        contexts = sorted(store.contexts.list(), key=lambda c: c.id)
        moves = [e.moves for e in store.events.of_type(MovesDerived)]
        checks = [[e.accepted, e.reason] for e in store.events.of_type(StepScoreChecked)]
        shares = {e.island: dict(e.shares) for e in store.events.of_type(IntentBanditSnapshot)}
    finally:
        store.close()
    better = objective.better

    def improves(score: float | None, than: float | None) -> bool:
        return score is not None and (than is None or better(score, than))

    initial_row = rows.get(1)
    initial = initial_row.score if initial_row is not None else None
    # Best after k calls: candidates made by one of the first k calls, or made without a call
    # (initial program, tune trials) before the k-th call was recorded.
    call_times = [c.created_at for c in contexts]
    call_index = {c.id: index for index, c in enumerate(contexts, start=1)}

    def calls_before(row: Any) -> int:
        if row.context_id in call_index:
            return call_index[row.context_id]
        return sum(1 for t in call_times if t <= row.created_at)

    correct = [r for r in rows.values() if r.status is CandidateStatus.CORRECT and r.score is not None]
    best_after: dict[int, float | None] = {}
    for k in CHECKPOINTS:
        best: float | None = None
        for row in correct:
            if calls_before(row) <= k and improves(row.score, best):
                best = row.score
        best_after[k] = best if len(contexts) >= k else None

    chain: list[Step] = []
    gain: dict[str, float] = {"llm": 0.0, "crossover": 0.0, "tune": 0.0}
    best = None
    for row in sorted(correct, key=lambda r: r.id):
        if not improves(row.score, best):
            continue
        if best is not None:
            delta = abs(row.score - best)
            gain[source_kind(row.operator)] += delta
            parent = rows.get(row.parent_id) if row.parent_id else None
            chain.append(Step(row.id, row.parent_id, row.operator, row.score, delta,
                              change_kind(parent.source if parent else None, row.source),
                              (row.description or "").strip().splitlines()[0][:100]
                              if row.description else ""))
        best = row.score

    mutation = [c for c in contexts if c.purpose == "mutation"]
    by_context = {r.context_id: r for r in rows.values() if r.context_id is not None}
    evaluable = correct_calls = improving = 0
    by_intent: dict[str, list[int]] = {}
    for call in mutation:
        child = by_context.get(call.id)
        intent = (str(child.notes.get("intent") or child.operator) if child is not None
                  else "no child recorded")
        counts = by_intent.setdefault(intent, [0, 0, 0, 0])
        counts[0] += 1
        if child is None or not child.status.evaluated:
            continue
        evaluable += 1
        counts[1] += 1
        if child.status is CandidateStatus.CORRECT:
            correct_calls += 1
            counts[2] += 1
            parent = rows.get(child.parent_id) if child.parent_id else None
            if parent is not None and improves(child.score, parent.score):
                improving += 1
                counts[3] += 1
    evaluations = sum(1 for r in rows.values() if r.id != 1 and r.status.evaluated)
    return RunFigures(task, seed, len(contexts), len(mutation), evaluations, initial, best,
                      best_after, gain, evaluable, correct_calls, improving, chain, wall_s,
                      by_intent, moves[-1] if moves else [], checks, shares)


def spent_calls(run_dir: Path) -> int:
    if not (run_dir / "run.sqlite").exists():
        return 0
    store = Store.open(run_dir, read_only=True)
    try:
        return store.contexts.count()
    finally:
        store.close()


def drive(task_dir: Path, run_dir: Path, calls: int, seed: int, model: str | None,
          settings: list[str], log: Path) -> float:
    """Runs (or resumes) until `calls` LLM calls are spent; returns this session's wall time."""
    sets = [f"budget.max_llm_calls={calls}", "evolution.generations=100000",
            f"evolution.seed={seed}", *settings]
    flags = [arg for item in sets for arg in ("--set", item)]
    if (run_dir / "run.sqlite").exists():
        command = [sys.executable, "-m", "cambrian", "resume", str(run_dir), "-q", *flags]
    else:
        command = [sys.executable, "-m", "cambrian", "run", str(task_dir), "-o", str(run_dir),
                   "-q", *flags, *(["--model", model] if model else [])]
    began = time.monotonic()
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, check=False)
    return time.monotonic() - began


def without_hints(task: str, out: Path) -> Path:
    """A copy of the task folder whose config keeps only its budgets and limits (an example's),
    or the folder as it is (one written in another framework's shape)."""
    source = DEFAULTS_TASKS[task]
    target = out / "tasks" / task
    if target.exists():
        return target
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    config = target / "config.yaml"
    if task in TASKS and config.exists():
        settings = yaml.safe_load(config.read_text()) or {}
        kept = {key: value for key, value in settings.items() if key in KEPT_SECTIONS}
        config.write_text("# The example's budgets and limits only (discovery --mode defaults)\n"
                          + yaml.safe_dump(kept, sort_keys=False))
    return target


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4g}"


def report(figures: list[RunFigures]) -> str:
    lines = []
    for f in figures:
        after = " ".join(f"{k}:{fmt(v)}" for k, v in f.best_after_calls.items())
        gains = ", ".join(f"{k} {v:.4g}" for k, v in f.gain_by_source.items() if v)
        lines.append(
            f"{f.task} seed {f.seed}: initial {fmt(f.initial)} -> best {fmt(f.best)}; "
            f"best after calls {after}; {f.llm_calls} calls ({f.mutation_calls} proposals), "
            f"{f.evaluations} evaluations, {f.wall_s / 60:.0f} min")
        lines.append(
            f"    proposals yielding a child that was evaluated {f.calls_evaluable}/"
            f"{f.mutation_calls}, correct {f.calls_correct}, better than its parent "
            f"{f.calls_improving}; gain from {gains or 'nothing'}")
        lines.append("    by intent (proposals / evaluated / correct / better): " + ", ".join(
            f"{intent} {'/'.join(map(str, counts))}"
            for intent, counts in sorted(f.by_intent.items())))
        if f.derived_moves:
            lines.append("    moves derived: " + " | ".join(m.split(":")[0] for m in f.derived_moves))
        if f.score_checks:
            lines.append(f"    step scores checked: {len(f.score_checks)}, refused "
                         f"{sum(not accepted for accepted, _ in f.score_checks)}")
        for island, shares in sorted(f.intent_shares.items()):
            lines.append(f"    intent shares, island {island}: " + ", ".join(
                f"{name} {share:.0%}" for name, share in sorted(shares.items(),
                                                                key=lambda kv: -kv[1])))
        for step in f.chain:
            lines.append(f"    step: candidate {step.candidate} ({step.operator}, {step.change}) "
                         f"{fmt(step.score)} (+{step.gain:.4g}) {step.description}")
    tasks = sorted({f.task for f in figures})
    lines.append("")
    lines.append("| task | seeds | initial | best after 10 / 20 / 40 calls | best | gain: LLM / "
                 "cross / tune | LLM share of the gain | LLM calls spent | evaluable / correct / "
                 "improving proposals | structural LLM step |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for task in tasks:
        runs = [f for f in figures if f.task == task]

        def avg(values: list[float | None]) -> str:
            known = [v for v in values if v is not None]
            return fmt(mean(known)) if known else "—"

        after = " / ".join(avg([r.best_after_calls[k] for r in runs]) for k in CHECKPOINTS)
        gains = " / ".join(f"{mean(r.gain_by_source[k] for r in runs):.3g}"
                           for k in ("llm", "crossover", "tune"))
        calls = sum(r.mutation_calls for r in runs)
        rates = (f"{sum(r.calls_evaluable for r in runs)} / {sum(r.calls_correct for r in runs)}"
                 f" / {sum(r.calls_improving for r in runs)} of {calls}")
        structural = sum(r.structural_llm_step for r in runs)
        total = sum(sum(r.gain_by_source.values()) for r in runs)
        share = (f"{sum(r.gain_by_source['llm'] for r in runs) / total:.0%}" if total > 0
                 else "no gain")
        spent = " + ".join(str(r.llm_calls) for r in runs)
        lines.append(f"| {task} | {len(runs)} | {avg([r.initial for r in runs])} | {after} | "
                     f"{avg([r.best for r in runs])} | {gains} | {share} | {spent} | {rates} | "
                     f"{structural}/{len(runs)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=None, help="default: the mode's tasks")
    parser.add_argument("--mode", choices=("examples", "defaults"), default="examples",
                        help="examples: the task folders as they are; defaults: no hints")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--label", default="default")
    parser.add_argument("--model", default=None, help="--model for new runs (default: config)")
    parser.add_argument("--set", dest="settings", action="append", default=[],
                        metavar="KEY=VALUE", help="a setting for every run (repeatable)")
    parser.add_argument("--analyse-only", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "discovery",
                        help="the folder LABEL is made in")
    args = parser.parse_args()
    out = args.out / args.label
    out.mkdir(parents=True, exist_ok=True)
    timings_path = out / "wall_seconds.json"
    timings: dict[str, float] = json.loads(timings_path.read_text()) if timings_path.exists() else {}
    figures = []
    tasks = args.tasks or ",".join(DEFAULTS_TASKS if args.mode == "defaults" else TASKS)
    for task in tasks.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            name = f"{task}-s{seed}"
            run_dir = out / name
            if not args.analyse_only and spent_calls(run_dir) < args.calls:
                folder = (without_hints(task, out) if args.mode == "defaults"
                          else DEFAULTS_TASKS[task])
                timings[name] = timings.get(name, 0.0) + drive(
                    folder, run_dir, args.calls, seed, args.model, args.settings,
                    out / f"{name}.log")
                timings_path.write_text(json.dumps(timings, indent=1))
            if (run_dir / "run.sqlite").exists():
                figures.append(analyse(run_dir, task, seed, timings.get(name, 0.0)))
                print(report(figures[-1:]).split("\n\n")[0], flush=True)
    print()
    print(report(figures))
    (out / "table.md").write_text(report(figures).split("\n\n")[-1] + "\n")
    (out / "summary.json").write_text(json.dumps(
        [{**asdict(f), "structural_llm_step": f.structural_llm_step} for f in figures],
        indent=1))


if __name__ == "__main__":
    main()
