"""Replay stability against the scripted server: a real run's stored prompt is sent again, the
replies become programs the way the proposer made them, and the task's evaluator scores them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import typer
from support.scripted_llm import (
    ScriptedLLM,
    counter_reply,
    current_value,
    incrementing,
    write_counter_task,
)
from typer.testing import CliRunner

from cambrian.api import start
from cambrian.cli.trace import register
from cambrian.config import ModelConfig
from cambrian.trace.llm_choice import provider_for
from cambrian.trace.loading import load_trace
from cambrian.trace.replay import replay_run

LIMIT = 50


@pytest.fixture(scope="module")
def evolved_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("replay")
    task = write_counter_task(root / "task", limit=LIMIT)
    with ScriptedLLM(incrementing) as llm:
        evolution = start(task, run_dir=root / "run", overrides=[
            "evolution.generations=3",
            "llm.models=[" + json.dumps(llm.model_config()) + "]",
        ])
        try:
            asyncio.run(evolution.run())
        finally:
            evolution.store.close()
    return root / "run"


def _replayed_child(run_dir: Path):
    trace = load_trace(run_dir)
    child = next(c for c in trace.evaluated() if c.status == "correct" and c.context_id)
    context = next(c for c in trace.contexts if c.id == child.context_id)
    return child, context


def _replier(original_reply: str):
    """Four kinds of reply, picked by the order of the calls: the original reply, prose that
    does not apply, another valid edit, and an edit the evaluator rejects (over the limit)."""

    def reply(messages: list[dict[str, str]], index: int) -> str:
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        wants_diff = "SEARCH" in first_user.split("## Your task")[-1]
        value = current_value(messages)
        return [original_reply, "I would rather not change anything.",
                counter_reply(value, 7, wants_diff), counter_reply(value, 10 * LIMIT, wants_diff),
                ][index % 4]

    return reply


def test_replay_reports_parse_evaluation_exact_match_and_score_ratio(evolved_run: Path):
    child, context = _replayed_child(evolved_run)
    assert context.response_text
    with ScriptedLLM(_replier(context.response_text)) as llm:
        provider = provider_for(ModelConfig(**llm.model_config(name="replayer")))
        report, path = asyncio.run(replay_run(evolved_run, candidate_id=child.id, n=4,
                                              provider=provider, concurrency=1))
        sent = llm.requests
    assert len(sent) == 4
    assert all(messages == context.messages for messages in sent)  # byte for byte
    assert report.context_id == context.id and report.candidate_id == child.id
    assert report.original_score == child.score
    summary = report.summary()
    assert summary["n"] == 4
    assert summary["parse_success"] == 0.75
    assert summary["evaluation_success"] == 0.5
    assert summary["exact_match"] == 0.25
    exact = next(t for t in report.trials if t.exact_match)
    assert exact.score == child.score and exact.score_ratio == 1.0
    other = next(t for t in report.trials if t.evaluated and not t.exact_match)
    parent_value = int(load_trace(evolved_run).candidate(report.parent_id).score)
    assert other.score == parent_value + 7
    assert other.score_ratio == pytest.approx((parent_value + 7) / child.score)
    unparsed = next(t for t in report.trials if not t.parsed)
    assert unparsed.error and not unparsed.evaluated
    saved = json.loads(path.read_text())
    assert path.name == f"replay-{context.id}.json"
    assert saved["summary"] == summary and saved["reply_format"] == report.reply_format


def test_cli_replay_with_another_model(evolved_run: Path):
    child, context = _replayed_child(evolved_run)
    app = typer.Typer(add_completion=False)

    @app.callback()
    def main() -> None:
        """Test root."""

    register(app)
    runner = CliRunner()
    with ScriptedLLM(lambda messages, index: context.response_text or "") as llm:
        result = runner.invoke(app, ["trace", "replay", str(evolved_run), "--context",
                                     context.id, "-n", "2", "--provider", "openai",
                                     "--model", "other-model", "--base-url", llm.base_url])
        assert len(llm.requests) == 2
    assert result.exit_code == 0, result.output
    assert "exact 100.0%" in result.output and "other-model" in result.output
    both = runner.invoke(app, ["trace", "replay", str(evolved_run), "--context", "1",
                               "--candidate", child.id])
    assert both.exit_code == 2 and "exactly one" in both.output
