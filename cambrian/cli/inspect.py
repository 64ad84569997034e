"""Commands that read a run or the registries: ``status``, ``best``, ``algorithms``, ``init``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from cambrian.cli.app import app, console, fail, fmt, pct
from cambrian.cli.terminal_text import plain
from cambrian.store.store import StoreError


@app.command()
def status(run_dir: Path = typer.Argument(...)) -> None:
    """Summarise a run: progress, scores, success rates, tokens and cost per model."""
    from cambrian.api import run_status
    from cambrian.status import share_rows

    try:
        st = run_status(run_dir)
    except (FileNotFoundError, StoreError) as exc:
        fail(str(exc))
    table = Table(title=f"{st.task} ({st.direction})", show_header=False)
    if st.state is not None:
        table.add_row("state", f"{st.state.words} — {plain(st.state.detail)}"
                      if st.state.detail else st.state.words)
    table.add_row("children evaluated", f"{st.generations} / {st.budget}")
    table.add_row("candidates by status",
                  ", ".join(f"{k}: {v}" for k, v in sorted(st.by_status.items())))
    table.add_row("initial score", fmt(st.initial_score))
    table.add_row("best score", f"{fmt(st.best_score)} (candidate {st.best_id})"
                  if st.best_id is not None else "none (no correct program yet)")
    purposes = sorted(st.calls_by_purpose.items(), key=lambda item: (-item[1], item[0]))
    table.add_row("LLM calls", str(st.llm_calls) + (
        " (" + ", ".join(f"{purpose} {count}" for purpose, count in purposes) + ")"
        if len(purposes) > 1 else ""))
    table.add_row("mutation calls yielding a program", pct(st.proposal_success))
    table.add_row("evaluated children correct", pct(st.correct_rate))
    if st.by_status.get("screened"):  # tiered judging: stopped at the quick stage
        table.add_row("evaluated children screened out", pct(st.screened_rate))
    table.add_row("correct children beating parent", pct(st.improvement_rate))
    if st.workers:  # where evaluations ran: "local", or Ray workers (HOST/NODE)
        table.add_row("evaluations per worker", ", ".join(
            f"{worker}: {count}" for worker, count in sorted(st.workers.items())))
    if st.containment_missing is not None:
        table.add_row("sandbox", "every mechanism active" if not st.containment_missing else
                      "lacks " + ", ".join(st.containment_missing) +
                      " (python -m cambrian.evaluate.containment)")
    if st.gpus:
        table.add_row("GPUs", ", ".join(st.gpus))
    for relaxed in st.containment_relaxed:
        table.add_row("sandbox relaxed", escape(relaxed))
    if st.last_session:
        ended = f" [{st.outcome}]" if st.outcome else ""
        table.add_row("last session ended", escape(f"{st.last_session}{ended}"))
    if st.guidance_changes:
        table.add_row("human guidance", f"{st.guidance or '(cleared)'} "
                                        f"[{st.guidance_changes} change(s); `cambrian guide`]")
    console.print(table)
    _failure_table(st.failures, run_dir)
    _reflection_table(st)
    _niche_table(st.niches)
    _phase_table(st)
    if st.bandit_shares:
        arms = sorted({arm for _, shares in st.bandit_shares for arm in shares})
        bandit = Table(title="LLM arm probabilities over time (UCB1 bandit)")
        bandit.add_column("pulls", justify="right")
        for arm in arms:
            bandit.add_column(arm, justify="right")
        for pulls, shares in share_rows(st.bandit_shares):
            bandit.add_row(str(pulls), *(pct(shares.get(arm)) for arm in arms))
        console.print(bandit)
    _intent_table(st)
    _model_table(st.models)
    _transport_table(st.transport)


def _transport_table(transport: list[Any]) -> None:
    """Per model: how its server answered (errors by kind, retries, latency)."""
    if not transport:
        return
    table = Table(title="LLM transport per model")
    for column in ("model", "requests", "errors", "retried", "errors by kind",
                   "latency p50 / p95 s", "last error"):
        table.add_column(column, justify="left" if column in ("model", "errors by kind",
                                                              "last error") else "right")
    for t in transport:
        latency = ("—" if t.latency_p50_s is None
                   else f"{t.latency_p50_s:.2f} / {t.latency_p95_s:.2f}")
        table.add_row(plain(t.model), str(t.requests), str(t.errors), str(t.retried),
                      plain(t.kinds_text) or "—", latency,
                      plain(t.last_error[:60]) or "—")
    console.print(table)


def _intent_table(st: Any) -> None:
    """The intent bandit per island: each intent's share of the proposals and gain per
    proposal; the derived moves and the checks of model-written step scores."""
    for snapshot in st.intent_bandit:
        table = Table(title=f"mutation intents on island {snapshot.island} (bandit, "
                            f"{snapshot.pulls} proposals)")
        for column in ("intent", "share", "proposals", "gain per proposal"):
            table.add_column(column, justify="left" if column == "intent" else "right")
        for arm, share in sorted(snapshot.shares.items(), key=lambda item: -item[1]):
            table.add_row(plain(arm), pct(share), str(snapshot.pulls_by_arm.get(arm, 0)),
                          fmt(snapshot.gain_per_pull.get(arm)))
        console.print(table)
    if st.derived_moves is not None:
        moves = st.derived_moves
        console.print("moves derived from the problem: " + (
            "; ".join(plain(m) for m in moves.moves) if moves.moves
            else f"none ({plain(moves.error)})"))
    refused = [c for c in st.score_checks if not c.accepted]
    if st.score_checks:
        console.print(f"model-written step scores checked against the evaluator: "
                      f"{len(st.score_checks)}, refused {len(refused)}"
                      + (f" (last: {plain(refused[-1].reason)})" if refused else ""))


def _niche_table(niches: list[Any]) -> None:
    """Strategy niches: per family the programs tagged with it, its best and that one's idea."""
    if not niches:
        return
    table = Table(title="strategy niches")
    for column in ("family", "programs", "best", "candidate", "key idea of the best"):
        table.add_column(column, justify="right" if column in ("programs", "best", "candidate")
                         else "left")
    for niche in niches:
        table.add_row(plain(niche.family), str(niche.count), fmt(niche.best_score),
                      str(niche.best_id), plain(niche.key_idea) or "—")
    console.print(table)


def _phase_table(st: Any) -> None:
    """Search phases: when each began and why, and the steering inside them."""
    if not st.phases:
        return
    table = Table(title="search phases")
    for column in ("phase", "evaluations", "budget", "best at start", "recoveries", "why"):
        table.add_column(column, justify="left" if column in ("phase", "why") else "right",
                         no_wrap=column == "phase")
    for span in st.phases:
        until = "now" if span.to_evaluated is None else str(span.to_evaluated)
        budget = (f"{span.from_budget:.0%}-" + ("now" if span.to_budget is None
                                                else f"{span.to_budget:.0%}"))
        table.add_row(span.phase, f"{span.from_evaluated}-{until}", budget,
                      fmt(span.best_at_start), str(span.recoveries), plain(span.reason))
    console.print(table)
    for item in st.steering:
        console.print(f"  {plain(item['text'])}")


def _failure_table(failures: list[Any], run_dir: Path) -> None:
    """Failed and refused candidates by reason, with the latest message of each."""
    if not failures:
        return
    table = Table(title="failures by reason")
    for column in ("reason", "count", "latest", "latest message"):
        table.add_column(column, justify="right" if column in ("count", "latest") else "left")
    for failure in failures:
        message = " ".join(failure.latest_message.split())
        table.add_row(failure.kind, str(failure.count), str(failure.latest_id),
                      plain((message[:160] + "…") if len(message) > 160 else message) or "—")
    console.print(table)
    console.print(f"A candidate's code, reply, prompt and output: cambrian show {run_dir} ID")


def _reflection_table(st: Any) -> None:
    """The latest self-reflection: when, and its recommendations (``reflection:`` section)."""
    if st.reflection is None:
        return
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(st.reflection_at or 0))
    table = Table(title=f"latest self-reflection: after {st.reflection.evaluated} evaluations, "
                        f"{when} ({st.reflections} in all)")
    for column in ("", "recommendation", "intent weight"):
        table.add_column(column, justify="right" if column != "recommendation" else "left")
    weights = st.reflection.intent_weights()
    for index, item in enumerate(st.reflection.items(), 1):
        weight = f"{item.intent} ×{weights[item.intent]:g}" if item.intent in weights else ""
        table.add_row(str(index), plain(f"{item.action} {item.text}"), weight)
    console.print(table)


def _share(count: int, total: int) -> str:
    return f"{count}/{total} ({pct(count / total if total else None)})"


def _model_table(models: list[Any]) -> None:
    """Per model: calls, what its proposals became, tokens and cost (the LLM ledger)."""
    table = Table(title="LLM ledger per model")
    for column in ("model", "LLM calls", "yielded a program", "evaluated correct",
                   "beat parent", "tokens", "cost $"):
        table.add_column(column, justify="left" if column == "model" else "right")
    for m in models:
        failed = f", {m.failed_calls} failed" if m.failed_calls else ""
        table.add_row(m.model, f"{m.calls} ({m.mutation_calls} mutation{failed})",
                      _share(m.programs, m.mutation_calls), _share(m.correct, m.evaluated),
                      _share(m.improved, m.correct), f"{m.tokens:,}", f"{m.cost_usd:.4f}")
    console.print(table)
    console.print("yielded: of the model's mutation calls; correct: of its evaluated children; "
                  "beat parent: of its correct children.")


@app.command()
def best(
    run_dir: Path = typer.Argument(...),
    out: Path | None = typer.Option(None, "--out", "-o", help=(
        "File to write, or folder for a program of several files (default: run_dir/best/)")),
) -> None:
    """Write the best program of a run."""
    from cambrian.api import NoCorrectProgram
    from cambrian.api import best as write_best_program

    try:
        written = write_best_program(run_dir, out)
    except (FileNotFoundError, StoreError, NoCorrectProgram) as exc:
        fail(str(exc))
    console.print(f"Best program (candidate {written.candidate_id}, score {fmt(written.score)}) "
                  f"written to {written.path}")


@app.command()
def algorithms() -> None:
    """List the search algorithms `--search` accepts."""
    from cambrian.search.registry import algorithm_names, get_algorithm

    table = Table("name", "what it does")
    for name in algorithm_names():
        table.add_row(name, get_algorithm(name).description)
    console.print(table)


@app.command()
def init(
    task_dir: Path = typer.Argument(..., help="New task folder to create"),
    force: bool = typer.Option(False, help="Write into an existing, non-empty folder"),
) -> None:
    """Create a working task skeleton (initial program, evaluator, problem statement, config)."""
    from cambrian.api import init as init_task

    try:
        written = init_task(task_dir, force=force)
    except FileExistsError as exc:
        fail(str(exc))
    for path in written:
        console.print(f"created {path}")
    console.print(f"Try it: cambrian run {task_dir} --generations 5")
    console.print(f"With an API model: cambrian run {task_dir} -g 5 --model gpt-4o-mini   "
                  "(key in OPENAI_API_KEY; claude-*, gemini-* alike)\n"
                  f"  or any OpenAI-compatible server: cambrian run {task_dir} -g 5 --model NAME "
                  "--api-base http://localhost:11434/v1 --api-key-env VAR", highlight=False)


