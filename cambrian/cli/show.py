"""``cambrian show RUN_DIR ID``: one candidate whole: what it is, its code, its diff to its
parent, the prompt and the reply that made it, and its evaluation output or error."""

from __future__ import annotations

import difflib
from pathlib import Path

import typer
from rich.rule import Rule
from rich.syntax import Syntax

from cambrian.cli.app import app, console, fail, fmt
from cambrian.cli.terminal_text import plain, printable
from cambrian.core.evaluation import EvaluationResult
from cambrian.lang.languages import language_by_name
from cambrian.store.rows import CandidateRow
from cambrian.store.store import Store, StoreError

OUTPUT_TAIL_CHARS = 3000


@app.command()
def show(
    run_dir: Path = typer.Argument(..., help="A run directory"),
    candidate_id: int = typer.Argument(..., help="The candidate (see `cambrian status`)"),
    prompt: bool = typer.Option(True, "--prompt/--no-prompt", help="Print the LLM messages"),
) -> None:
    """Print one candidate: code, diff to its parent, the prompt and reply that made it, and
    its evaluation output or error."""
    try:
        store = Store.open(run_dir, read_only=True)
    except (FileNotFoundError, StoreError) as exc:
        fail(str(exc))
    try:
        row = store.candidates.find(candidate_id)
        if row is None:
            fail(f"{run_dir} has no candidate {candidate_id} (it has "
                 f"{store.candidates.count()} candidates)")
        assert row is not None
        _header(row, store)
        parent = store.candidates.find(row.parent_id) if row.parent_id is not None else None
        if row.source is not None:
            console.print(Rule("code"))
            console.print(_code(row.source, row.language))
            if parent is not None and parent.source is not None:
                console.print(Rule(f"diff to its parent, candidate {parent.id}"))
                console.print(_diff(parent, row))
        if row.context_id is not None:
            context = store.contexts.get(row.context_id)
            if prompt:
                for message in context.messages:
                    console.print(Rule(f"prompt: {message.get('role', '')}"))
                    console.print(plain(str(message.get("content", ""))), highlight=False)
            console.print(Rule(plain(f"reply ({context.model}, {context.prompt_tokens} + "
                                     f"{context.completion_tokens} tokens, "
                                     f"{context.latency_s:.1f} s)")))
            console.print(plain(context.response_text or f"(no reply: {context.error})"),
                          highlight=False)
        evaluation = store.evaluations.latest(row.id)
        if evaluation is not None:
            console.print(Rule(f"evaluation (on {store.evaluations.worker_of(row.id)})"))
            _evaluation(evaluation)
    finally:
        store.close()


def _header(row: CandidateRow, store: Store) -> None:
    notes = row.notes
    facts = [f"status {row.status}", f"score {fmt(row.score)}", f"operator {row.operator}",
             f"parent {row.parent_id}", f"generation {row.generation}, island {row.island}"]
    if row.model:
        facts.append(f"model {row.model} ({notes.get('arm', '')})")
    if notes.get("format"):
        facts.append(f"reply format {notes['format']}")
    if notes.get("intent"):
        facts.append(f"intent {notes['intent']}")
    console.print(f"[bold]Candidate {row.id}[/]  " + " · ".join(plain(f) for f in facts))
    if row.description:
        console.print(f"[italic]{plain(row.description)}[/]")
    if row.error:
        console.print(f"[bold red]error:[/] {plain(row.error)}")


def _code(source: str, language: str) -> Syntax:
    try:
        lexer = language_by_name(language).fence_tag or "text"
    except KeyError:
        lexer = "text"
    return Syntax(printable(source), lexer, line_numbers=True, word_wrap=True)


def _diff(parent: CandidateRow, child: CandidateRow) -> Syntax:
    lines = difflib.unified_diff((parent.source or "").splitlines(),
                                 (child.source or "").splitlines(),
                                 f"candidate {parent.id}", f"candidate {child.id}", lineterm="")
    return Syntax(printable("\n".join(lines)) or "(no difference)", "diff")


def _evaluation(result: EvaluationResult) -> None:
    console.print(f"status {result.status} · score {fmt(result.combined_score)} · "
                  f"{result.duration_s:.2f} s")
    for name, value in sorted(result.public.items()):
        console.print(f"  {plain(str(name))}: {plain(str(value))}", highlight=False)
    for title, text in (("feedback", result.text_feedback), ("error", result.error),
                        ("stdout", result.stdout), ("stderr", result.stderr)):
        if text.strip():
            tail = text if len(text) <= OUTPUT_TAIL_CHARS else "…" + text[-OUTPUT_TAIL_CHARS:]
            console.print(f"[bold]{title}:[/]")
            console.print(plain(tail.rstrip()), highlight=False)
