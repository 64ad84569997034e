"""Cycling figures on a hand-built run, every expected value derived by hand below.

Edits of LINEAGE_RUN (see trace_builders), counted lines only:

    1→2 (it 1)  deletes '# scale', 'a = 1', 'b = 2'        adds 'a = 10'
    1→3 (it 2)  deletes 'c = a + b'                         adds 'c = a * b'
    2→4 (it 3)  deletes 'a = 10', 'return c'                adds '# scale', 'a = 1  # restored',
                                                                 'b = 2', 'd = 3', 'return c + d'
    3→5 (it 4)  deletes 'a = 1', 'c = a * b'                adds 'a = 2', 'c = a + b', 'a = 10'
    4→6 (it 5)  deletes 'return c + d'                      adds 'return c'

Lineage scope (deleted on the child's own ancestry):
    2→4: '# scale' identical comment (trivial, re-introduced, span 3-1=2), 'a = 1  # restored'
         differs from 'a = 1' only by its comment (trivial), 'b = 2' literal (span 2)
         -> added 5, re-introduced 2, literal 1, trivial 2
    3→5: only 1→3 is on its ancestry: 'c = a + b' literal (span 4-2=2) -> added 3, re 1, lit 1
    4→6: 'return c' deleted by 2→4 at it 3: literal (span 2) -> added 1, re 1, lit 1
    total: added 11, re-introduced 4, literal 3, tuning 0, trivial 2; spans [2, 2, 2, 2]
Run scope (deleted by any earlier edit) differs only for 3→5:
    'a = 2' has the skeleton 'a=#' of the deleted 'a = 1' (tuning); 'c = a + b' literal (span 2);
    'a = 10' was deleted by 2→4 at it 3 (literal, span 1) -> added 3, re 2, literal 2, tuning 1
    total: added 11, re-introduced 5, literal 4, tuning 1, trivial 2; spans [2, 2, 2, 1, 2]
Per-edit shares over iterations 1..5 (mean x = 3, sum (x-3)^2 = 10):
    lineage [0, 0, 2/5, 1/3, 1] -> slope (1/3 + 2) / 10 = 7/30
    run     [0, 0, 2/5, 2/3, 1] -> slope (2/3 + 2) / 10 = 4/15
"""

from __future__ import annotations

from pathlib import Path

import pytest
from trace_builders import LINEAGE_RUN, SRC_2, SRC_4, SRC_6, Program, build_run, lines

from cambrian.store.store import Store
from cambrian.trace import (
    StoreLineage,
    analyse_cycling,
    lineage_deletions,
    load_trace,
    reintroduction_share,
)
from cambrian.trace.cycling import RecycleCounts, least_squares_slope


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return build_run(tmp_path / "run", LINEAGE_RUN)


def test_per_edit_counts_in_both_scopes(run_dir: Path):
    report = analyse_cycling(load_trace(run_dir))
    by_child = {e.child_id: e for e in report.edits}
    assert list(by_child) == ["2", "3", "4", "5", "6"]  # the patch_failed proposal is no edit
    assert by_child["2"].lineage == RecycleCounts(added=1)
    assert by_child["3"].run == RecycleCounts(added=1)
    assert by_child["4"].lineage == RecycleCounts(added=5, reintroduced=2, literal=1, trivial=2)
    assert by_child["4"].run == by_child["4"].lineage
    assert by_child["4"].lineage_spans == (2, 2)
    assert by_child["5"].lineage == RecycleCounts(added=3, reintroduced=1, literal=1)
    assert by_child["5"].run == RecycleCounts(added=3, reintroduced=2, literal=2, tuning=1)
    assert by_child["5"].lineage_spans == (2,)
    assert sorted(by_child["5"].run_spans) == [1, 2]
    assert by_child["6"].lineage == RecycleCounts(added=1, reintroduced=1, literal=1)


def test_run_summary_shares_split_slope_and_spans(run_dir: Path):
    report = analyse_cycling(load_trace(run_dir))
    lineage, run = report.lineage, report.run
    assert lineage.counts == RecycleCounts(added=11, reintroduced=4, literal=3, tuning=0, trivial=2)
    assert lineage.share == pytest.approx(4 / 11)
    assert lineage.split() == pytest.approx({"literal": 3 / 11, "tuning": 0.0, "trivial": 2 / 11})
    assert lineage.slope == pytest.approx(7 / 30)
    assert sorted(lineage.spans) == [2, 2, 2, 2] and lineage.median_span == 2.0
    assert run.counts == RecycleCounts(added=11, reintroduced=5, literal=4, tuning=1, trivial=2)
    assert run.share == pytest.approx(5 / 11)
    assert run.slope == pytest.approx(4 / 15)
    assert sorted(run.spans) == [1, 2, 2, 2, 2] and run.median_span == 2.0


def test_lineage_deletions_most_recent_first(run_dir: Path):
    trace = load_trace(run_dir)
    expected = ["    return c + d",  # 4→6
                "    a = 10", "    return c",  # 2→4
                "    # scale", "    a = 1", "    b = 2"]  # 1→2
    assert lineage_deletions(trace, "6") == expected
    assert lineage_deletions(trace, 6) == expected
    assert lineage_deletions(trace, "5") == ["    a = 1", "    c = a * b", "    c = a + b"]
    assert lineage_deletions(trace, "1") == []


def test_store_adapter_gives_the_same_deletions(run_dir: Path):
    trace = load_trace(run_dir)
    store = Store.open(run_dir)
    try:
        lineage = StoreLineage(store)
        for candidate_id in ("1", "4", "5", "6"):
            expected = lineage_deletions(trace, candidate_id)
            assert lineage_deletions(lineage, candidate_id) == expected
    finally:
        store.close()


def test_reintroduction_share_against_a_deletion_history(run_dir: Path):
    trace = load_trace(run_dir)
    # 2→4 adds five lines, two of them ('# scale', 'b = 2') byte-identical to 1→2's deletions.
    assert reintroduction_share(SRC_2, SRC_4, lineage_deletions(trace, "2")) == pytest.approx(0.4)
    assert reintroduction_share(SRC_4, SRC_6, lineage_deletions(trace, "4")) == 1.0
    assert reintroduction_share(SRC_4, SRC_6, []) == 0.0
    # Trailing whitespace in the history is normalised away; no added line -> 0.0.
    assert reintroduction_share(SRC_4, SRC_6, ["    return c   "]) == 1.0
    assert reintroduction_share(SRC_6, SRC_6 + "\n}\n", ["}"]) == 0.0


def test_only_the_run_scope_sees_a_line_deleted_on_another_branch(tmp_path: Path):
    programs = [
        Program(None, 0, lines("y = 2"), 1.0),
        Program(1, 1, lines("y = 2", "x = 1"), 2.0),  # branch A adds 'x = 1'
        Program(2, 2, lines("y = 2"), 1.5),           # ... and deletes it again at it 2
        Program(1, 3, lines("x = 1", "y = 2"), 3.0),  # branch B adds 'x = 1' at it 3
    ]
    report = analyse_cycling(load_trace(build_run(tmp_path / "run", programs)))
    branch_a_delete, branch_b = report.edits[1], report.edits[2]
    assert branch_a_delete.lineage == RecycleCounts() and branch_a_delete.deleted == 1
    assert branch_b.lineage == RecycleCounts(added=1)  # never deleted on 1→4's own lineage
    assert branch_b.run == RecycleCounts(added=1, reintroduced=1, literal=1)
    assert branch_b.run_spans == (1,)
    # Added lines over the run: 'x = 1' by 1→2 (new) and by 1→4 (re-introduced run-wide only).
    assert report.lineage.share == 0.0
    assert report.run.share == pytest.approx(1 / 2)


def test_least_squares_slope_edge_cases():
    assert least_squares_slope([], []) is None
    assert least_squares_slope([1.0], [0.5]) is None
    assert least_squares_slope([2.0, 2.0], [0.0, 1.0]) is None  # no spread in x
    assert least_squares_slope([0.0, 1.0, 2.0], [1.0, 3.0, 5.0]) == pytest.approx(2.0)
