"""Programs of several files in the store: each text kept once, a candidate a manifest of path
-> text, read back as the program's one text by every read of the candidates table."""

from __future__ import annotations

from pathlib import Path

from support.store_queries import add_candidate, sql

from cambrian.core.evaluation import EvaluationResult
from cambrian.core.status import CandidateStatus
from cambrian.store.candidates import source_hash
from cambrian.store.migrations import SCHEMA_VERSION
from cambrian.store.store import Store
from cambrian.task.program_files import ProgramFile, join_files

INIT = ProgramFile("pkg/__init__.py", "from .a import f\n")
A1 = ProgramFile("pkg/a.py", "# EVOLVE-BLOCK-START\ndef f():\n    return 1\n# EVOLVE-BLOCK-END\n")
A2 = ProgramFile("pkg/a.py", "# EVOLVE-BLOCK-START\ndef f():\n    return 2\n# EVOLVE-BLOCK-END\n")


def _store(tmp_path: Path) -> Store:
    store = Store.open(tmp_path / "run", create=True)
    store.runs.create(run_id="r", task_name="t", task_dir="/t", direction="maximize",
                      language="python", config={}, seed=0, code_version="test")
    return store


def _add(store: Store, source: str | None, parent: int | None = None) -> int:
    return add_candidate(store, generation=0 if parent is None else 1, island=0,
                         parent_id=parent, operator="init" if parent is None else "diff",
                         status="pending", language="python", source=source)


def test_each_text_is_stored_once_and_read_back_as_the_bundle(tmp_path: Path):
    store = _store(tmp_path)
    first, second = join_files([INIT, A1]), join_files([INIT, A2])
    one = _add(store, first)
    two = _add(store, second, parent=one)
    three = _add(store, "x = 1\n")  # a one-file program stays in candidates.source
    failed = _add(store, None, parent=one)  # a proposal that left no program
    rows = sql(store, "SELECT id, source, source_hash FROM candidates ORDER BY id").fetchall()
    assert rows[0][1] is None and rows[0][2] == source_hash(first)
    assert rows[2][1] == "x = 1\n" and rows[3][1:] == (None, None)
    assert sql(store, "SELECT COUNT(*) FROM blobs").fetchone()[0] == 3  # INIT once, A1, A2
    assert store.candidates.blobs.files(two) == [INIT, A2]
    assert store.candidates.blobs.files(three) == []
    # Every read gives the program's text.
    assert store.candidates.get(one).source == first
    assert [r.source for r in store.candidates.list()] == [first, second, "x = 1\n", None]
    assert store.candidates.sources({one, two, three, failed}) == {
        one: first, two: second, three: "x = 1\n", failed: None}
    assert store.candidates.by_ids({two})[two].source == second
    assert store.candidates.find_by_source(second).id == two
    assert store.candidates.children_counts() == {one: 1}  # the failed one had no program
    store.evaluations.add(two, EvaluationResult(status="ok", combined_score=2.0))
    store.candidates.update(two, status=CandidateStatus.CORRECT, score=2.0)
    assert store.candidates.find_evaluated(source_hash(second)).id == two
    assert store.candidates.replay_rows()[0].code_length == len(INIT.text) + len(A2.text)
    assert store.candidates.evaluated_in_commit_order()[0][0].source == second
    held, named = store.candidates.blobs.stored_chars()
    assert held == len(INIT.text) + len(A1.text) + len(A2.text) < named
    store.close()


def test_secret_values_are_redacted_from_every_file(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True, secrets=["sk-SECRET123"])
    store.runs.create(run_id="r", task_name="t", task_dir="/t", direction="maximize",
                      language="python", config={}, seed=0, code_version="test")
    leaked = ProgramFile("pkg/a.py", "KEY = 'sk-SECRET123'\n# EVOLVE-BLOCK-START\n"
                                     "# EVOLVE-BLOCK-END\n")
    cid = _add(store, join_files([INIT, leaked]))
    assert "sk-SECRET123" not in (store.candidates.get(cid).source or "")
    assert all("sk-SECRET123" not in text for (text,) in sql(store, "SELECT text FROM blobs"))
    store.close()


def test_a_store_of_schema_2_gains_the_file_tables(tmp_path: Path):
    store = _store(tmp_path)
    old = _add(store, "x = 1\n")
    sql(store, "DROP TABLE candidate_files")
    sql(store, "DROP TABLE blobs")
    store.meta.set("schema_version", "2")
    store.close()
    store = Store.open(tmp_path / "run")
    assert store.meta.get("schema_version") == str(SCHEMA_VERSION) == "5"
    assert store.candidates.get(old).source == "x = 1\n"
    new = _add(store, join_files([INIT, A1]), parent=old)
    assert store.candidates.blobs.files(new) == [INIT, A1]
    store.close()
