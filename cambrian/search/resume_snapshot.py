"""The resume snapshot: the archive's in-memory state (the selector's programs and structures,
the best fitness) written to the store so that a resume loads it and replays only the
evaluations committed after it, instead of all of them (``algorithm.py`` explains the replay).

What it holds. The selector's attributes (all but its context, which the resumed run builds
from its configuration), pickled, so every algorithm, a plugin's included, is covered without
code of its own and objects shared between its structures stay shared; the children counts are
written as the store counts them (what a full replay sets), not as the live loop bumped them.

When it is used. Its header names the format, a fingerprint of what the archive depends on
(the selector's class, the context's options and database settings, the islands, the initial
program, the seed, the objective's direction), the last evaluation and candidate it covers, its
program count and the payload's SHA-256. A resume uses it only when all of these still hold, the
payload unpickles through an allow-list of modules (Cambrian's, numpy's, collections, the
selector's own package) and, after the evaluations that followed it are replayed, the archive
holds as many programs as the store has evaluated. Otherwise the resume says why in one log
line and replays every evaluation, with a fresh selector: the snapshot is derived data, so a
missing, stale or damaged one costs time and never data. Like the rest of the run folder it is
trusted as far as ``resume`` trusts the run's plugins and task code, which it runs.

When it is written. Every ``SNAPSHOT_EVERY`` evaluations taken in, and when a session ends
normally (not when it is interrupted mid-commit); a state that cannot be pickled, or holds a
secret value, is not written (a warning; the previous snapshot stays valid, with a longer
replay after it).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import pickle
import time
import zlib
from typing import Any

from cambrian.core.status import EVALUATED
from cambrian.search.archive import Archive
from cambrian.store.recorder import Recorder
from cambrian.store.store import Store

FORMAT = 1
SNAPSHOT_EVERY = 10_000  # evaluations taken in between snapshots within a session
log = logging.getLogger(__name__)

_SAFE_BUILTINS = frozenset({"set", "frozenset", "dict", "list", "tuple", "int", "float", "str",
                            "bytes", "bytearray", "bool", "complex", "slice", "range"})
_SAFE_MODULES = frozenset({"collections", "copyreg", "datetime", "decimal", "fractions"})


class Unusable(Exception):
    """Why a stored snapshot cannot be used (the resume replays everything)."""


def fingerprint(archive: Archive) -> str:
    """What the archive a replay builds depends on, besides the history."""
    selector = archive.selector
    context = selector.context

    def plain(value: Any) -> Any:
        dump = getattr(value, "model_dump", None)
        return dump(mode="json") if dump is not None else repr(value)

    described = {
        "selector": f"{type(selector).__module__}.{type(selector).__qualname__}",
        "initial_id": context.initial_id, "num_islands": context.num_islands,
        "options": plain(context.options), "database": plain(context.database),
        "seed": archive.seed, "objective": repr(archive.objective),
    }
    text = json.dumps(described, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, packages: frozenset[str]) -> None:
        super().__init__(io.BytesIO(data))
        self.packages = packages

    def find_class(self, module: str, name: str) -> Any:
        root = module.split(".", 1)[0]
        if ((module == "builtins" and name in _SAFE_BUILTINS) or module in _SAFE_MODULES
                or root in self.packages):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refused to load {module}.{name}")


def _packages(archive: Archive) -> frozenset[str]:
    own = type(archive.selector).__module__.split(".", 1)[0]
    return frozenset({"cambrian", "numpy", "pydantic", "pydantic_core", own})


def write(archive: Archive, store: Store, recorder: Recorder) -> bool:
    """Store the archive's state as it stands now (between commits); False when it could not
    be written (logged)."""
    began = time.perf_counter()
    snapshots = store.resume_snapshot
    evaluations_through = snapshots.last_evaluation_id()
    candidates_through = snapshots.last_candidate_id()
    programs = archive.selector.programs
    # Children as the store counts them: the counts at restore, plus the children stored since.
    since = store.candidates.children_counts(after_id=archive.children_from)
    live: dict[int, int] = {}
    for parent_id in set(since) | set(archive.child_calls):
        program = programs.get(parent_id)
        if program is not None:
            live[parent_id] = program.children
            program.children += since.get(parent_id, 0) - archive.child_calls[parent_id]
    try:
        state = {"selector": {k: v for k, v in vars(archive.selector).items() if k != "context"},
                 "best_fitness": archive.best_fitness}
        payload = zlib.compress(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL), 1)
    except Exception as exc:  # noqa: BLE001 - a selector holding something unpicklable
        log.warning("resume snapshot not written: the search state could not be pickled (%s)",
                    exc)
        return False
    finally:
        for parent_id, children in live.items():
            programs[parent_id].children = children
    header = {"format": FORMAT, "fingerprint": fingerprint(archive),
              "evaluations_through": evaluations_through,
              "candidates_through": candidates_through, "programs": len(programs),
              "sha256": hashlib.sha256(payload).hexdigest(), "bytes": len(payload)}
    try:
        recorder.save_resume_snapshot(header, payload)
    except ValueError as exc:
        log.warning("resume snapshot not written: %s", exc)
        return False
    archive.taken_since_snapshot = 0
    log.debug("resume snapshot of %d programs written (%d bytes, %.2f s)", len(programs),
              len(payload), time.perf_counter() - began)
    return True


def load(archive: Archive, store: Store) -> bool:
    """Load the stored snapshot into the archive's (fresh) selector and take in the
    evaluations committed after it; False, with a log line saying why, when there is none or
    it cannot be used (the selector is left fresh, for a full replay)."""
    snapshots = store.resume_snapshot
    header = snapshots.header()
    if header is None:
        log.info("resume: no search snapshot in the store; replaying every evaluation")
        return False
    selector = archive.selector
    fresh = dict(vars(selector))
    try:
        replayed = _load(archive, store, header)
    except Exception as exc:  # noqa: BLE001 - whatever is wrong with it, replay instead
        vars(selector).clear()
        vars(selector).update(fresh)
        archive.best_fitness = None
        reason = str(exc) if isinstance(exc, Unusable) else f"{type(exc).__name__}: {exc}"
        log.warning("resume: the search snapshot is not usable (%s); replaying every "
                    "evaluation instead", reason)
        return False
    log.info("resume: search snapshot of %d programs loaded, %d later evaluations replayed",
             header["programs"], replayed)
    return True


def _load(archive: Archive, store: Store, header: dict[str, Any]) -> int:
    snapshots = store.resume_snapshot
    if header.get("format") != FORMAT:
        raise Unusable(f"format {header.get('format')!r}, this version reads {FORMAT}")
    if header.get("fingerprint") != fingerprint(archive):
        raise Unusable("made with another search configuration (algorithm, its options, "
                       "islands, seed or objective)")
    evaluations_through = int(header["evaluations_through"])
    candidates_through = int(header["candidates_through"])
    if (evaluations_through > snapshots.last_evaluation_id()
            or candidates_through > snapshots.last_candidate_id()):
        raise Unusable("it covers evaluations the store does not have")
    if snapshots.reevaluated_before(evaluations_through):
        raise Unusable("a program it covers was evaluated again after it")
    payload = snapshots.payload()
    if payload is None or hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise Unusable("its payload is damaged (digest differs)")
    state = _Unpickler(zlib.decompress(payload), _packages(archive)).load()
    if not isinstance(state, dict) or not isinstance(state.get("selector"), dict):
        raise Unusable("its payload is not a search state")
    selector = archive.selector
    vars(selector).update(state["selector"])
    if len(selector.programs) != header.get("programs"):
        raise Unusable("its program count differs from its header")
    archive.best_fitness = state["best_fitness"]
    rows = store.candidates.replay_rows(after_evaluation=evaluations_through)
    for row in rows:
        archive.take_in(archive.replay_record(row))
    later_children = store.candidates.children_counts(after_id=candidates_through)
    for parent_id, count in later_children.items():
        program = selector.programs.get(parent_id)
        if program is not None:
            program.children += count
    evaluated = store.candidates.count(*EVALUATED)
    if len(selector.programs) != evaluated:
        raise Unusable(f"the archive would hold {len(selector.programs)} programs, the store "
                       f"has {evaluated} evaluated")
    return len(rows)
