"""The archive snapshot kept in ``search_state``.

Selectors are rebuilt on resume by replaying the committed evaluations (``algorithm.py``), so the
archive itself is never the source of truth. Still, the issue asks the store to hold the search
state, and a person inspecting a run wants to see which programs sit on which island without
replaying anything: at every commit the engine stores ``Selector.snapshot()`` under
``archive_snapshot``. On resume the replayed selector's snapshot is compared with the stored one;
a difference (e.g. a selector whose ``add`` is not a pure function of the history) is logged and
recorded as an ``archive_snapshot_mismatch`` event.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from cambrian.search.algorithm import Selector
from cambrian.store.store import Store

STATE_KEY = "archive_snapshot"
log = logging.getLogger(__name__)


def _plain(value: Any) -> Any:
    """``value`` as it reads back from the store (JSON: string keys, lists for tuples)."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def save_snapshot(store: Store, selector: Selector) -> None:
    store.put_state(STATE_KEY, selector.snapshot())


def verify_snapshot(store: Store, selector: Selector) -> bool:
    """True when the replayed archive matches the snapshot stored at the last commit (or when
    there is none, e.g. a run stored before snapshots existed)."""
    stored = store.get_state(STATE_KEY)
    if stored is None:
        return True
    replayed = _plain(selector.snapshot())
    if replayed == stored:
        return True
    log.warning("replaying the run did not rebuild the stored archive: stored %s, replayed %s",
                stored, replayed)
    store.add_event("archive_snapshot_mismatch", {"stored": stored, "replayed": replayed})
    return False
