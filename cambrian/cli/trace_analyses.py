"""``cambrian trace label|agreement|tune|replay``: the analyses that call an LLM or run the
evaluator again (seed 001 §5.1, §5.3, §5.4). Registered by :func:`cambrian.cli.trace.register`.

Model options (judge, knob finder, replay model) are shared: ``--provider``, ``--model``,
``--base-url``, repeatable ``--set key=value`` and ``--model-file model.yaml`` (one
``llm.models`` entry); see :mod:`cambrian.trace.llm_choice`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from cambrian.cli.trace_format import _fail, _fmt, _pct, console

PROVIDER = typer.Option(None, "--provider", help="local | openai | anthropic | gemini")
MODEL = typer.Option(None, "--model", help="Model name (local: a registered GGUF or a path)")
BASE_URL = typer.Option(None, "--base-url", help="OpenAI-compatible server URL")
SETTINGS = typer.Option(None, "--set", help="Any model field, key=value (repeatable)")
MODEL_FILE = typer.Option(None, "--model-file", help="YAML file with one model entry")


def _model(provider: str | None, model: str | None, base_url: str | None,
           settings: list[str] | None, model_file: Path | None) -> Any:
    from cambrian.trace.llm_choice import ModelChoiceError, model_config_from_options

    try:
        return model_config_from_options(model_file=model_file, provider=provider, model=model,
                                         base_url=base_url, settings=settings)
    except ModelChoiceError as exc:
        _fail(str(exc))


def _provider(config: Any) -> Any:
    from cambrian.llm.base import LLMError
    from cambrian.trace.llm_choice import provider_for

    try:
        return provider_for(config)
    except (LLMError, ValueError, OSError) as exc:
        _fail(f"cannot set up model {config.model}: {exc}")


def label_command(
    run_dir: Path = typer.Argument(..., help="A run directory (or any readable trace)"),
    provider: str | None = PROVIDER, model: str | None = MODEL,
    base_url: str | None = BASE_URL, settings: list[str] | None = SETTINGS,
    model_file: Path | None = MODEL_FILE,
    batch: int = typer.Option(4, "--batch", min=1, help="Diffs per judge request"),
    attempts: int = typer.Option(3, "--attempts", min=1, help="Tries per batch"),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, max=2.0),
    concurrency: int = typer.Option(1, "--concurrency", min=1, help="Requests in flight"),
    edits: list[str] | None = typer.Option(None, "--edit", help="Only this child id"),
) -> None:
    """Label every parent->child edit with the nine edit types (LLM judge, cached)."""
    from cambrian.trace.importers import UnknownTraceFormat
    from cambrian.trace.llm_choice import judge_id
    from cambrian.trace.taxonomy_judge import JudgeSettings, label_run

    config = _model(provider, model, base_url, settings, model_file)
    judge = judge_id(config)
    chosen = _provider(config)
    judge_settings = JudgeSettings(batch_size=batch, max_attempts=attempts,
                                   temperature=temperature, concurrency=concurrency,
                                   use_grammar=config.provider == "local")
    try:
        labelling, path = asyncio.run(label_run(run_dir, chosen, judge, judge_settings,
                                                edit_ids=edits))
    except (FileNotFoundError, UnknownTraceFormat, ValueError) as exc:
        _fail(str(exc))
    document = json.loads(path.read_text())
    table = Table(title=f"Edit types by {judge} ({len(labelling.labels)} of "
                        f"{document['edits']} edits labelled)")
    for column in ("label", "prevalence", "odds ratio (improves)", "95% interval"):
        table.add_column(column, justify="left" if column == "label" else "right")
    prevalence = document["prevalence"]
    for row in sorted(document["helpfulness"], key=lambda r: -prevalence.get(r["label"], 0)):
        table.add_row(row["label"], _pct(prevalence.get(row["label"])), _fmt(row["odds_ratio"], 3),
                      f"{_fmt(row['ci_low'], 3)} – {_fmt(row['ci_high'], 3)}")
    console.print(table)
    usage = document["usage"]
    console.print(f"{usage['calls']} judge calls ({usage['malformed_replies']} malformed replies "
                  f"retried), {usage['cache_hits']} edits from the cache, "
                  f"{len(labelling.unlabelled)} left unlabelled. Written to {path}")


def agreement_command(
    run_dir: Path = typer.Argument(..., help="The labelled run"),
    reference: Path = typer.Argument(..., help="JSONL: {\"child_id\": ..., \"labels\": [...]}"),
    judge: str | None = typer.Option(None, "--judge", help="provider:model of cached labels "
                                        "(default: the judge of the last `trace label`)"),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON"),
) -> None:
    """Agreement of the judge's labels with reference labels (precision, recall, kappa...)."""
    from cambrian.trace.extras import TAXONOMY_FILE, extras_dir
    from cambrian.trace.importers import UnknownTraceFormat
    from cambrian.trace.taxonomy_judge import cached_labels
    from cambrian.trace.taxonomy_stats import agreement, read_reference_labels

    try:
        truth = read_reference_labels(reference)
        if judge is None:
            saved = extras_dir(run_dir) / TAXONOMY_FILE
            if not saved.exists():
                _fail(f"{run_dir} has no labels yet: run `cambrian trace label` first")
            judged = {k: tuple(v) for k, v in json.loads(saved.read_text())["labels"].items()}
        else:
            judged = cached_labels(run_dir, judge)
    except (OSError, ValueError, UnknownTraceFormat) as exc:
        _fail(str(exc))
    report = agreement(truth, judged)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
        return
    table = Table(title=f"Agreement on {report.edits} edits")
    for column in ("label", "precision", "recall", "F1", "kappa"):
        table.add_column(column, justify="left" if column == "label" else "right")
    for row in report.per_label:
        table.add_row(row.label, _fmt(row.precision, 3), _fmt(row.recall, 3), _fmt(row.f1, 3),
                      _fmt(row.kappa, 3))
    console.print(table)
    console.print(f"macro kappa {_fmt(report.macro_kappa, 3)}, micro-F1 "
                  f"{_fmt(report.micro_f1, 3)}, mean Jaccard {_fmt(report.mean_jaccard, 3)}, "
                  f"exact match {_pct(report.exact_match)}")
    if report.missing_from_judge:
        console.print(f"{len(report.missing_from_judge)} reference edits have no judge labels")


def tune_command(
    run_dir: Path = typer.Argument(..., help="A Cambrian run directory"),
    candidate: str | None = typer.Option(None, "--candidate", help="Default: the run's best"),
    budget: int = typer.Option(24, "--budget", min=1, help="Search evaluations"),
    seed: int = typer.Option(0, "--seed"),
    llm_knobs: bool = typer.Option(False, "--llm-knobs", help="Find knobs with one LLM call "
                                   "(default: the deterministic finder)"),
    provider: str | None = PROVIDER, model: str | None = MODEL,
    base_url: str | None = BASE_URL, settings: list[str] | None = SETTINGS,
    model_file: Path | None = MODEL_FILE,
) -> None:
    """Tuning ceiling: Bayesian optimisation of one program's numeric knobs."""
    from cambrian.trace.tuning import tune_run

    knob_provider, use_grammar = None, False
    if llm_knobs or any(v for v in (provider, model, base_url, settings, model_file)):
        config = _model(provider, model, base_url, settings, model_file)
        knob_provider, use_grammar = _provider(config), config.provider == "local"
    try:
        result, document, path = asyncio.run(tune_run(
            run_dir, candidate_id=candidate, budget=budget, rng_seed=seed,
            knob_provider=knob_provider, use_grammar=use_grammar))
    except (FileNotFoundError, KeyError, ValueError) as exc:
        _fail(str(exc))
    table = Table(title=f"Tuning candidate {document['candidate_id']} "
                        f"({document['knob_source']} knobs, {budget} evaluations)")
    for column in ("knob", "literal", "interval", "scale", "best"):
        table.add_column(column)
    for knob in result.knobs:
        table.add_row(knob.name, knob.source_literal, f"[{knob.low:.4g}, {knob.high:.4g}]",
                      knob.scale, _fmt(result.best_values.get(knob.name), 6))
    console.print(table)
    if result.stopped:
        console.print(f"[yellow]stopped:[/] {result.stopped}")
    console.print(f"program score {_fmt(document['program_score'], 6)}, tuned ceiling "
                  f"{_fmt(document['tuned_score'], 6)}, run best {_fmt(document['run_best'], 6)}"
                  f"; defaults reproduce the score: {document['defaults_match']}. "
                  f"Written to {path}")


def replay_command(
    run_dir: Path = typer.Argument(..., help="A Cambrian run directory"),
    context: str | None = typer.Option(None, "--context", help="Context (LLM call) id"),
    candidate: str | None = typer.Option(None, "--candidate", help="Replay the call that "
                                            "produced this candidate"),
    n: int = typer.Option(5, "-n", min=1, help="Replays"),
    concurrency: int = typer.Option(2, "--concurrency", min=1),
    provider: str | None = PROVIDER, model: str | None = MODEL,
    base_url: str | None = BASE_URL, settings: list[str] | None = SETTINGS,
    model_file: Path | None = MODEL_FILE,
) -> None:
    """Replay stability: re-send a stored prompt N times and evaluate the children."""
    from cambrian.trace.replay import replay_run

    if (context is None) == (candidate is None):
        _fail("give exactly one of --context and --candidate")
    chosen = None
    if any(v for v in (provider, model, base_url, settings, model_file)):
        chosen = _provider(_model(provider, model, base_url, settings, model_file))
    try:
        report, path = asyncio.run(replay_run(run_dir, context_id=context, candidate_id=candidate,
                                              n=n, provider=chosen, concurrency=concurrency))
    except (FileNotFoundError, KeyError, ValueError) as exc:
        _fail(str(exc))
    summary = report.summary()
    table = Table(title=f"Replaying context {report.context_id} (candidate "
                        f"{report.candidate_id}, {report.reply_format} replies) on "
                        f"{report.replay_model}")
    for column in ("#", "parsed", "evaluated", "exact", "score", "ratio", "note"):
        table.add_column(column)
    for trial in report.trials:
        table.add_row(str(trial.index + 1), str(trial.parsed), str(trial.evaluated),
                      str(trial.exact_match), _fmt(trial.score, 6), _fmt(trial.score_ratio, 4),
                      trial.error[:60])
    console.print(table)
    console.print(f"parse {_pct(summary['parse_success'])}, evaluation "
                  f"{_pct(summary['evaluation_success'])}, exact {_pct(summary['exact_match'])}, "
                  f"median score ratio {_fmt(summary['median_score_ratio'], 4)} (original "
                  f"{_fmt(report.original_score, 6)}). Written to {path}")


def register_analyses(trace_app: typer.Typer) -> None:
    trace_app.command("label")(label_command)
    trace_app.command("agreement")(agreement_command)
    trace_app.command("tune")(tune_command)
    trace_app.command("replay")(replay_command)
