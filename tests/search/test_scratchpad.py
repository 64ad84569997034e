from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from support.scripted_llm import ScriptedLLM, incrementing, write_counter_task
from support.store_queries import sql

from cambrian.api import start
from cambrian.meta.scratchpad import parse_scratchpad
from cambrian.store.store import Store

META_REPLY = ("WORKED:\n- raising VALUE\nDID NOT WORK:\n- nothing yet\n"
              "RECOMMENDATIONS:\n1. raise VALUE in bigger steps\n2. keep VALUE below the limit\n")


def test_parse_tolerates_remote_model_formatting():
    text = "Some preface\nWORKED:\n* x\nRECOMMENDATIONS:\n1) first idea\n- second idea\n\n3. third\n"
    scratchpad, recs = parse_scratchpad(text, limit=2)
    assert recs == ["first idea", "second idea"]
    assert "WORKED" in scratchpad


def test_scratchpad_updates_on_schedule_and_reaches_later_prompts(tmp_path: Path):
    task = write_counter_task(tmp_path / "task")

    def reply(messages, index):
        if "Update the notes" in messages[-1]["content"]:
            return META_REPLY
        return incrementing(messages, index)

    with ScriptedLLM(reply) as llm:
        evolution = start(task, run_dir=tmp_path / "run", overrides=[
            "llm.models=[" + json.dumps(llm.model_config()) + "]", "evolution.generations=7",
            "novelty.enabled=false", "meta.interval=3", "meta.per_prompt=2",
        ])
        asyncio.run(evolution.run())
        evolution.store.close()
        requests = llm.requests
    store = Store.open(tmp_path / "run")
    notes = sql(store, "SELECT evaluated, recommendations_json FROM meta_notes").fetchall()
    # Every 3 evaluations; two evaluations may commit in one wake-up of the loop, so a note can
    # come one evaluation late.
    assert len(notes) == 2 and notes[0][0] in (3, 4) and notes[1][0] - notes[0][0] in (2, 3, 4)
    assert json.loads(notes[0][1]) == ["raise VALUE in bigger steps", "keep VALUE below the limit"]
    meta_prompt = next(m for m in requests if "Update the notes" in m[-1]["content"])
    # The recent attempts are summarised: the last `interval` evaluated children (which ones
    # depends on how the evaluations interleaved).
    summarised = [int(n) for n in re.findall(r"^- program (\d+) ", meta_prompt[-1]["content"],
                                             re.MULTILINE)]
    assert len(summarised) == 3 and all(n >= 2 for n in summarised)
    files = sorted(p.name for p in (tmp_path / "run" / "meta").iterdir())
    assert files == [f"meta_{n[0]}.md" for n in notes]
    meta_call = [i for i, m in enumerate(requests) if "Update the notes" in m[-1]["content"]][0]
    later = [m[-1]["content"] for m in requests[meta_call + 1:] if "Update the notes" not in m[-1]["content"]]
    # The proposal in flight while the notes were written (and its retries) was built without
    # them; every prompt after the first one carrying them carries them.
    carrying = [("raise VALUE in bigger steps" in p) for p in later]
    assert True in carrying and all(carrying[carrying.index(True):])
    assert sql(store, "SELECT COUNT(*) FROM contexts WHERE purpose='meta'").fetchone()[0] == 2
