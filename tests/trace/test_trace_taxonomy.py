"""The edit-taxonomy judge against the scripted OpenAI-compatible server (real HTTP provider),
reply validation, the label cache, and the label statistics on hand-computed examples."""

from __future__ import annotations

import asyncio
import json
import math
import re
from pathlib import Path

import pytest
import typer
from support.scripted_llm import ScriptedLLM
from trace_builders import LINEAGE_RUN, build_run
from typer.testing import CliRunner

from cambrian.cli.trace import register
from cambrian.config import ModelConfig
from cambrian.trace.edits import collect_edits, shorten, unified_diff
from cambrian.trace.label_cache import LabelCache
from cambrian.trace.llm_choice import judge_id, provider_for
from cambrian.trace.loading import load_trace
from cambrian.trace.taxonomy import (
    LABELS,
    SYSTEM_PROMPT,
    JudgeReply,
    JudgeReplyError,
    parse_reply,
    reply_grammar,
)
from cambrian.trace.taxonomy_judge import JudgeSettings, cached_labels, label_run
from cambrian.trace.taxonomy_stats import (
    agreement,
    cohen_kappa,
    helpfulness,
    odds_ratio,
    prevalence,
    read_reference_labels,
)

EDIT_HEADER = re.compile(r"### Edit (E\d+) \(\w+\)\n```diff\n(.*?)```", re.DOTALL)


def labels_for(diff: str) -> list[str]:
    """The scripted judge's rule: pruning when a diff removes more lines than it adds."""
    removed = sum(1 for line in diff.splitlines() if line.startswith("-"))
    added = sum(1 for line in diff.splitlines() if line.startswith("+"))
    return ["pruning", "hyperparameter_tuning"] if removed > added else ["local_refinement"]


def judge_reply(messages: list[dict[str, str]]) -> str:
    first_user = next(m["content"] for m in messages if m["role"] == "user")
    edits = [{"id": name, "labels": labels_for(diff), "rationale": "scripted"}
             for name, diff in EDIT_HEADER.findall(first_user)]
    return json.dumps({"edits": edits})


def malformed_first(messages: list[dict[str, str]], index: int) -> str:
    if index == 0:
        return "Sure! Here are the labels: E1 is a refactor."
    return judge_reply(messages)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return build_run(tmp_path / "run", LINEAGE_RUN)


def _provider(llm: ScriptedLLM):
    config = ModelConfig(**llm.model_config())
    return provider_for(config), judge_id(config)


# ---------------------------------------------------------------------------- reply validation


def test_reply_is_validated_against_the_schema_and_the_batch():
    good = {"edits": [{"id": "E1", "labels": ["Bug fix", "bug_fix", "pruning"]},
                      {"id": "E2", "labels": ["refactor"], "rationale": "renames"}]}
    assert parse_reply("```json\n" + json.dumps(good) + "\n```", 2) == [
        (("bug_fix", "pruning"), ""), (("refactor",), "renames")]
    with pytest.raises(JudgeReplyError, match="not valid JSON"):
        parse_reply("E1: refactor", 1)
    with pytest.raises(JudgeReplyError, match="schema"):
        parse_reply('{"edits": [{"id": "E1", "labels": ["speedup"]}]}', 1)
    with pytest.raises(JudgeReplyError, match="schema"):
        parse_reply('{"edits": [{"id": "E1", "labels": []}]}', 1)  # at least one label
    with pytest.raises(JudgeReplyError, match="missing E2"):
        parse_reply('{"edits": [{"id": "E1", "labels": ["refactor"]}]}', 2)
    with pytest.raises(JudgeReplyError, match="appears twice"):
        parse_reply('{"edits": [{"id": "E1", "labels": ["refactor"]}, '
                    '{"id": "E1", "labels": ["pruning"]}]}', 1)
    schema = JudgeReply.model_json_schema()
    assert set(schema["$defs"]["EditVerdict"]["properties"]["labels"]["items"]["enum"]) == \
        set(LABELS)
    assert all(label in SYSTEM_PROMPT for label in LABELS)


def test_grammar_names_every_label_and_the_batch_ids_in_order():
    grammar = reply_grammar(3)
    assert all(f'"\\"{label}\\""' in grammar for label in LABELS)
    root = grammar.splitlines()[0]
    assert root == 'root ::= "{\\"edits\\": [" edit0 ", " edit1 ", " edit2 "]}"'
    assert '\\"id\\": \\"E3\\"' in grammar and "E4" not in grammar


def test_diffs_have_no_file_header_and_long_ones_keep_both_ends():
    diff = unified_diff("a = 1\nb = 2\n", "a = 1\nb = 3\n")
    assert diff == "@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n"
    long = "".join(f"+line {i}\n" for i in range(1000))
    short = shorten(long, 400)
    assert short.startswith("+line 0\n") and short.endswith("+line 999\n")
    assert "diff lines omitted" in short and len(short) < 500


# ---------------------------------------------------------------------------- the judge


def test_malformed_reply_is_retried_and_the_second_run_is_served_from_the_cache(run_dir: Path):
    with ScriptedLLM(malformed_first) as llm:
        provider, judge = _provider(llm)
        settings = JudgeSettings(batch_size=2, max_attempts=2)
        first, path = asyncio.run(label_run(run_dir, provider, judge, settings))
        assert len(llm.requests) == 4  # three batches (2+2+1 diffs), one retried
        retry = llm.requests[1]
        assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
        assert "could not be used: the reply is not valid JSON" in retry[3]["content"]
        assert first.calls == 4 and first.malformed_replies == 1 and first.cache_hits == 0
        edits = {e.child_id: e for e in collect_edits(load_trace(run_dir))}
        assert set(first.labels) == set(edits) == {"2", "3", "4", "5", "6"}
        for child_id, edit in edits.items():
            assert list(first.labels[child_id]) == labels_for(edit.diff)

        again, _ = asyncio.run(label_run(run_dir, provider, judge, settings))
        assert len(llm.requests) == 4  # no new call
        assert again.calls == 0 and again.cache_hits == 5 and again.labels == first.labels

    document = json.loads(path.read_text())
    assert path == run_dir / "trace" / "taxonomy.json"
    assert document["judge"] == "openai:scripted" and document["usage"]["cache_hits"] == 5
    assert document["labels"]["2"] == ["pruning", "hyperparameter_tuning"]
    with LabelCache.for_location(run_dir) as cache:  # stored in the run store itself
        assert cache.path == run_dir / "run.sqlite"
        assert cache.judges() == [("openai:scripted", "cambrian-taxonomy-v1", 5)]
    assert cached_labels(run_dir, "openai:scripted") == first.labels
    assert cached_labels(run_dir, "openai:another-judge") == {}


def test_a_batch_that_stays_malformed_is_left_unlabelled_and_not_cached(run_dir: Path):
    with ScriptedLLM(lambda messages, index: "no JSON here") as llm:
        provider, judge = _provider(llm)
        labelling, _ = asyncio.run(label_run(run_dir, provider, judge,
                                             JudgeSettings(batch_size=5, max_attempts=3),
                                             edit_ids=["2", "4"]))
        assert len(llm.requests) == 3
    assert labelling.labels == {}
    assert set(labelling.unlabelled) == {"2", "4"}
    assert "no valid reply after 3 attempts" in labelling.unlabelled["2"]
    with LabelCache.for_location(run_dir) as cache:
        assert cache.judges() == []


def test_cli_label_then_agreement(run_dir: Path, tmp_path: Path):
    app = typer.Typer(add_completion=False)

    @app.callback()
    def main() -> None:
        """Test root."""

    register(app)
    reference = tmp_path / "reference.jsonl"
    reference.write_text("\n".join(json.dumps(row) for row in [
        {"child_id": "2", "labels": ["pruning", "Hyperparameter tuning"]},
        {"child_id": "3", "labels": ["bug_fix"]},
        {"child_id": "99", "labels": ["refactor"]},
    ]) + "\n")
    runner = CliRunner()
    with ScriptedLLM(lambda messages, index: judge_reply(messages)) as llm:
        labelled = runner.invoke(app, ["trace", "label", str(run_dir), "--provider", "openai",
                                       "--model", "scripted", "--base-url", llm.base_url,
                                       "--batch", "3"])
        assert labelled.exit_code == 0, labelled.output
        assert len(llm.requests) == 2
    assert "local_refinement" in labelled.output and "2 judge calls" in labelled.output
    result = runner.invoke(app, ["trace", "agreement", str(run_dir), str(reference), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["edits"] == 2 and report["missing_from_judge"] == ["99"]
    assert report["exact_match"] == 0.5  # edit 2 matches; 3 is local_refinement, not bug_fix
    table = runner.invoke(app, ["trace", "agreement", str(run_dir), str(reference),
                                "--judge", "openai:scripted"])
    assert table.exit_code == 0 and "macro kappa" in table.output
    bad = runner.invoke(app, ["trace", "label", str(run_dir), "--set", "temperatures"])
    assert bad.exit_code == 2 and "key=value" in bad.output


# ---------------------------------------------------------------------------- statistics

REFERENCE = {"e1": ["hyperparameter_tuning"], "e2": ["hyperparameter_tuning", "local_refinement"],
             "e3": ["bug_fix"], "e4": ["pruning"]}
JUDGED = {"e1": ["hyperparameter_tuning"], "e2": ["hyperparameter_tuning"],
          "e3": ["bug_fix", "local_refinement"], "e4": ["refactor"], "e5": ["pruning"]}


def test_agreement_on_a_hand_computed_example():
    report = agreement(REFERENCE, JUDGED)
    rows = {row.label: row for row in report.per_label}
    assert report.edits == 4 and report.missing_from_judge == []
    hyper = rows["hyperparameter_tuning"]
    assert (hyper.true_positive, hyper.false_positive, hyper.false_negative,
            hyper.true_negative) == (2, 0, 0, 2)
    assert (hyper.precision, hyper.recall, hyper.kappa) == (1.0, 1.0, 1.0)
    local = rows["local_refinement"]  # reference: e2; judge: e3
    assert (local.precision, local.recall, local.f1) == (0.0, 0.0, 0.0)
    # observed 2/4; chance 1/4*1/4 + 3/4*3/4 = 5/8 -> (1/2 - 5/8) / (3/8) = -1/3
    assert local.kappa == pytest.approx(-1 / 3)
    assert rows["bug_fix"].kappa == pytest.approx(1.0)
    assert rows["pruning"].precision is None and rows["pruning"].recall == 0.0
    assert rows["pruning"].kappa == pytest.approx(0.0)  # observed 3/4 = chance 3/4
    assert rows["refactor"].recall is None and rows["refactor"].kappa == pytest.approx(0.0)
    assert rows["efficiency"].kappa is None  # nobody ever used it: kappa undefined
    assert report.macro_kappa == pytest.approx((1 - 1 / 3 + 1 + 0 + 0) / 5)
    # micro: tp 3, fp 2 (local e3, refactor e4), fn 2 (local e2, pruning e4)
    assert report.micro_precision == pytest.approx(3 / 5)
    assert report.micro_f1 == pytest.approx(3 / 5)
    assert report.mean_jaccard == pytest.approx((1 + 1 / 2 + 1 / 2 + 0) / 4)
    assert report.exact_match == pytest.approx(1 / 4)


def test_cohen_kappa_edge_cases():
    assert cohen_kappa(0, 0, 0, 0) is None
    assert cohen_kappa(5, 0, 0, 0) is None  # both always say yes
    assert cohen_kappa(1, 1, 1, 1) == pytest.approx(0.0)


def test_prevalence_and_helpfulness_with_haldane_correction():
    labels = {"a": ["hyperparameter_tuning"], "b": ["hyperparameter_tuning", "local_refinement"],
              "c": ["bug_fix"], "d": ["local_refinement"], "e": []}
    improved = {"a": True, "b": False, "c": True, "d": False, "e": True}
    shares = prevalence(labels)  # over the 4 labelled edits
    assert shares["hyperparameter_tuning"] == 0.5 and shares["bug_fix"] == 0.25
    assert shares["pruning"] == 0.0 and len(shares) == 9
    rows = {row.label: row for row in helpfulness(labels, improved)}
    hyper = rows["hyperparameter_tuning"]
    assert (hyper.improved_with, hyper.other_with, hyper.improved_without,
            hyper.other_without) == (1, 1, 1, 1)
    assert hyper.odds_ratio == pytest.approx(1.0)
    bug = rows["bug_fix"]  # table [[1, 0], [1, 2]] -> (1.5 * 2.5) / (0.5 * 1.5) = 5
    assert bug.odds_ratio == pytest.approx(5.0)
    se = math.sqrt(1 / 1.5 + 1 / 0.5 + 1 / 1.5 + 1 / 2.5)
    assert bug.ci_low == pytest.approx(math.exp(math.log(5) - 1.959964 * se))
    assert bug.ci_high == pytest.approx(math.exp(math.log(5) + 1.959964 * se))
    assert rows["local_refinement"].odds_ratio == pytest.approx(
        odds_ratio(0, 2, 2, 0)[0]) == pytest.approx((0.5 * 0.5) / (2.5 * 2.5))


def test_reference_file_is_read_strictly(tmp_path: Path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"child_id": 4, "labels": ["Local refinement", "local-refinement"]}\n\n'
                    '{"edit_id": "5", "labels": []}\n')
    assert read_reference_labels(path) == {"4": ("local_refinement",), "5": ()}
    path.write_text('{"child_id": "4", "labels": ["speedup"]}\n')
    with pytest.raises(ValueError, match=":1: unknown label"):
        read_reference_labels(path)
    path.write_text('{"labels": ["refactor"]}\n')
    with pytest.raises(ValueError, match="needs an edit id"):
        read_reference_labels(path)


def test_foreign_traces_get_a_sidecar_cache_and_are_not_written_into(run_dir: Path,
                                                                      tmp_path: Path):
    from cambrian.trace.export import export_trace

    folder = export_trace(run_dir, tmp_path / "export")
    before = {p.name for p in folder.iterdir()}
    with ScriptedLLM(lambda messages, index: judge_reply(messages)) as llm:
        provider, judge = _provider(llm)
        labelling, path = asyncio.run(label_run(folder, provider, judge, JudgeSettings()))
    assert len(labelling.labels) == 5
    assert {p.name for p in folder.iterdir()} == before | {"trace"}
    assert path == folder / "trace" / "taxonomy.json"
    assert (folder / "trace" / "labels.sqlite").exists()
    assert cached_labels(folder, judge) == labelling.labels
