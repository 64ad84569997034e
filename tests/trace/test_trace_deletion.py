"""Deletion-aware search support on small hand-built lineages (see trace_builders).

LINEAGE_RUN, lineage of program 6 is 1 -> 2 -> 4 -> 6:
    1->2 deletes '# scale' (a comment: trivial), 'a = 1', 'b = 2'
    2->4 deletes 'a = 10', 'return c'
    4->6 deletes 'return c + d'
Program 5's lineage is 1 -> 3 -> 5: 1->3 deletes 'c = a + b'; 3->5 deletes 'a = 1', 'c = a * b'.

DELETION_RUN: 1 -> 2 drops 'y = clip(y)' (score 1 -> 2), 2 -> 3 adds it back together with a
bare 'else:' (2 -> 1.5), 3 -> 4 drops the clip, the 'else:' and 'y = x * 0.5' (program fails).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from trace_builders import (
    D_SRC_2,
    D_SRC_3,
    DELETION_RUN,
    LINEAGE_RUN,
    SRC_4,
    SRC_6,
    Program,
    build_run,
    lines,
)

from cambrian.store.store import Store
from cambrian.trace.deletion import (
    deleted_lines_in_lineage,
    deletion_history_text,
    is_trivial,
    reintroduction_share,
)


@pytest.fixture
def lineage_store(tmp_path: Path):
    store = Store.open(build_run(tmp_path / "run", LINEAGE_RUN))
    yield store
    store.close()


@pytest.fixture
def deletion_store(tmp_path: Path):
    store = Store.open(build_run(tmp_path / "deletions", DELETION_RUN))
    yield store
    store.close()


def test_deleted_lines_follow_the_ancestry_only(lineage_store: Store):
    assert deleted_lines_in_lineage(lineage_store, 6) == {
        "    return c + d", "    a = 10", "    return c", "    a = 1", "    b = 2"}
    assert deleted_lines_in_lineage(lineage_store, 5) == {
        "    a = 1", "    c = a * b", "    c = a + b"}
    assert deleted_lines_in_lineage(lineage_store, 1) == set()  # the seed has no history
    # 7 is a proposal without a source: its own edit deletes nothing, its history is 6's.
    assert deleted_lines_in_lineage(lineage_store, 7) == \
        deleted_lines_in_lineage(lineage_store, 6)
    assert deleted_lines_in_lineage(lineage_store, 999) == set()  # no such candidate
    assert deletion_history_text(lineage_store, 999) == ""


def test_trivial_lines_are_not_deletions(deletion_store: Store):
    assert is_trivial("    else:", "python") and is_trivial("  # note", "python")
    assert is_trivial("break;", "cpp") and not is_trivial("return c;", "cpp")
    # 3 -> 4 deleted the bare 'else:' too, but it is not part of the history.
    assert deleted_lines_in_lineage(deletion_store, 4) == {"    y = clip(y)", "    y = x * 0.5"}


def test_reintroduction_share_counts_only_lineage_deleted_lines(lineage_store: Store,
                                                                deletion_store: Store):
    deleted = deleted_lines_in_lineage(lineage_store, 4)
    # 4 -> 6 adds back 'return c', which 2 -> 4 deleted: the whole addition is a re-introduction.
    assert reintroduction_share(SRC_4, SRC_6, deleted) == 1.0
    child = SRC_6.replace("    d = 3\n", "    d = 3\n    a = 10\n    e = 5\n")
    assert reintroduction_share(SRC_6, child, deleted_lines_in_lineage(lineage_store, 6)) == 0.5
    assert reintroduction_share(SRC_6, SRC_6, deleted) == 0.0  # nothing added
    # 2 -> 3 adds 'y = clip(y)' (deleted by 1 -> 2) and a new bare 'else:'.
    history = deleted_lines_in_lineage(deletion_store, 2)
    assert reintroduction_share(D_SRC_2, D_SRC_3, history) == 0.5


def test_history_text_lists_absent_deleted_lines_with_their_score_effect(lineage_store: Store):
    text = deletion_history_text(lineage_store, 6)
    rows = [row for row in text.splitlines() if row.startswith("- ")]
    # 'return c' and 'b = 2' are in program 6 again; '# scale' is a comment.
    assert rows == [
        "- `return c + d` — removed by program 6 (3 -> 4, better)",
        "- `a = 10` — removed by program 4 (2 -> 3, better)",
        "- `a = 1` — removed by program 2 (1 -> 2, better)",
    ]
    assert text.startswith("## Lines this lineage already deleted\n")
    short = deletion_history_text(lineage_store, 6, max_lines=2)
    assert short.splitlines()[-1] == "- ... and 1 more"
    assert deletion_history_text(lineage_store, 1) == ""


def test_history_text_counts_repeated_deletions_and_failures(deletion_store: Store):
    rows = [row for row in deletion_history_text(deletion_store, 4).splitlines()
            if row.startswith("- ")]
    assert rows == [
        "- `y = x * 0.5` — removed by program 4 (1.5 -> failed, the program then failed)",
        ("- `y = clip(y)` — removed by program 4 (1.5 -> failed, the program then failed); "
         "deleted 2 times in this lineage"),
    ]


def test_minimised_runs_call_lower_scores_better(tmp_path: Path):
    store = Store.open(build_run(tmp_path / "min", DELETION_RUN[:2], direction="minimize"))
    try:
        assert deletion_history_text(store, 2).splitlines()[-1] == \
            "- `y = clip(y)` — removed by program 2 (1 -> 2, worse)"
    finally:
        store.close()


def test_long_lines_are_shortened(tmp_path: Path):
    long_line = "    value = compute(" + ", ".join(f"argument_{i}" for i in range(20)) + ")"
    store = Store.open(build_run(tmp_path / "long", [
        Program(None, 0, lines("def h():", long_line, "    return value"), 1.0),
        Program(1, 1, lines("def h():", "    value = 1", "    return value"), 1.0),
    ]))
    try:
        row = deletion_history_text(store, 2).splitlines()[-1]
        assert "..." in row and "(1 -> 1, no change)" in row
        assert len(row) < 100 + 60
    finally:
        store.close()

