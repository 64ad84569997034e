"""The edit-taxonomy judge on the real local 0.5B model: the GBNF grammar must make its first
reply valid, so two edits cost exactly one call (slow: marked ``local_llm``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from trace_builders import LINEAGE_RUN, build_run

from cambrian.llm.local_provider import LocalLlamaProvider
from cambrian.trace.taxonomy import LABELS
from cambrian.trace.taxonomy_judge import JudgeSettings, label_run

SMALL_MODEL = "qwen2.5-coder-0.5b-instruct"


@pytest.mark.local_llm
def test_local_judge_labels_two_edits_in_one_constrained_call(tmp_path: Path):
    run_dir = build_run(tmp_path / "run", LINEAGE_RUN)
    provider = LocalLlamaProvider.from_registry(SMALL_MODEL, n_ctx=4096)
    settings = JudgeSettings(batch_size=2, max_attempts=2, use_grammar=True)
    try:
        labelling, path = asyncio.run(label_run(run_dir, provider, f"local:{SMALL_MODEL}",
                                                settings, edit_ids=["2", "6"]))
        again, _ = asyncio.run(label_run(run_dir, provider, f"local:{SMALL_MODEL}", settings,
                                         edit_ids=["2", "6"]))
    finally:
        provider.close()
    assert labelling.calls == 1 and labelling.malformed_replies == 0
    assert set(labelling.labels) == {"2", "6"} and not labelling.unlabelled
    for labels in labelling.labels.values():
        assert 1 <= len(labels) <= 3 and set(labels) <= set(LABELS)
    assert labelling.prompt_tokens > 500 and labelling.completion_tokens > 0
    assert again.calls == 0 and again.labels == labelling.labels
    assert json.loads(path.read_text())["judge"] == f"local:{SMALL_MODEL}"
