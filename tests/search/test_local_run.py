"""A few generations of circle packing with the real embedded model (0.5B, llama.cpp): the whole
loop offline — grammar-constrained replies, patches, sandboxed evaluation, ledger, novelty."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from support.store_queries import sql, stored_events

from cambrian.api import start
from cambrian.store.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "circle_packing"


@pytest.mark.local_llm
def test_local_model_drives_a_short_run(tmp_path: Path):
    evolution = start(EXAMPLE, run_dir=tmp_path / "run", overrides=[
        "llm.models=[" + json.dumps({"provider": "local", "model": "qwen2.5-coder-0.5b-instruct"}) + "]",
        "evolution.generations=2", "budget.max_llm_calls=4", "meta.enabled=false",
    ])
    summary = asyncio.run(evolution.run())
    evolution.store.close()
    assert summary.initial_score is not None and summary.llm_calls >= 1
    store = Store.open(tmp_path / "run")
    contexts = sql(store, 
        "SELECT params_json, response_text, prompt_tokens, completion_tokens, cost_usd "
        "FROM contexts WHERE purpose='mutation'").fetchall()
    assert contexts and all(text for _, text, *_ in contexts)
    for params_json, text, prompt_tokens, completion_tokens, cost in contexts:
        params = json.loads(params_json)
        assert params["grammar"], "local calls are grammar-constrained"
        assert prompt_tokens > 0 and completion_tokens > 0 and cost == 0.0
        if "SEARCH" in params["grammar"]:
            assert "<<<<<<< SEARCH\n" in text and ">>>>>>> REPLACE" in text
        else:  # whole function or whole block: exactly one python fence
            assert len(re.findall(r"^```python$", text, re.MULTILINE)) == 1
    statuses = {row.status for row in store.candidates.list() if row.id != 1}
    assert statuses <= {"correct", "incorrect", "patch_failed", "rejected", "duplicate"}
    assert stored_events(store, "session_end")[-1]["payload"]["reason"] == summary.stop_reason
    store.close()
