"""The UI's ledger log (``ui/cache.py``) gives the LLM transport chart the series the store's
rows give, read once and extended with the calls stored since."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.ledger_calls import add_calls

from cambrian.llm.health import series_of, transport_series
from cambrian.store.store import Store
from cambrian.ui.cache import LedgerLogs, read_ledger


def test_the_transport_chart_comes_from_the_ledger_log(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch):
    store = Store.open(tmp_path / "run", create=True)
    store.runs.create(run_id="r", task_name="t", task_dir="/t", direction="maximize",
                      language="python", config={}, seed=0, code_version="test")
    logs = LedgerLogs()
    assert series_of(logs.current(store).transport_calls()) == transport_series(store)
    add_calls(store, monkeypatch, 400, 900.0, seed=1)
    log = logs.current(store)
    assert series_of(log.transport_calls()) == transport_series(store)
    add_calls(store, monkeypatch, 300, 3000.0, seed=2, start=1_700_001_000.0)  # extended
    assert logs.current(store) is log and len(log.call_at) == 700
    assert series_of(log.transport_calls()) == transport_series(store)
    assert series_of(read_ledger(store).transport_calls()) == transport_series(store)
    store.close()
