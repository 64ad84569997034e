"""Static analysis of the hand-built run (seed 001 §5.1); expectations worked out by hand.

LINEAGE_RUN scores (maximised): 1:1.0, 2:2.0, 3:1.5, 4:3.0, 5:2.5, 6:4.0; program 7 (it 6) never
produced a program. The final best is 6 with lineage 1→2→4→6 (depth 3). Of the five evaluated
children, 3 and 5 lie off that lineage: dead-branch share 2/5. Iterations span 0..6 and 6 was
found at iteration 5: normalised 5/6.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from trace_builders import LINEAGE_RUN, build_run

from cambrian.trace import analyse_static, load_trace


def test_best_lineage_depth_timing_and_dead_branches(tmp_path: Path):
    report = analyse_static(load_trace(build_run(tmp_path / "run", LINEAGE_RUN)))
    assert report.best_id == "6" and report.best_score == 4.0
    assert report.best_lineage == ["1", "2", "4", "6"]
    assert report.lineage_depth == 3
    assert report.normalised_best_iteration == pytest.approx(5 / 6)
    assert report.evaluated_children == 5
    assert report.dead_branch_evaluations == 2
    assert report.dead_branch_share == pytest.approx(0.4)


def test_program_sizes_and_best_so_far(tmp_path: Path):
    report = analyse_static(load_trace(build_run(tmp_path / "run", LINEAGE_RUN)))
    # LOC excludes the '# scale' comment line; literals count numbers in code only.
    assert [(p.candidate_id, p.loc, p.numeric_literals) for p in report.programs] == [
        ("1", 5, 2), ("2", 4, 1), ("3", 5, 2), ("4", 6, 3), ("5", 6, 3), ("6", 6, 3),
    ]
    assert report.best_so_far == [(0, 1.0), (1, 2.0), (2, 2.0), (3, 3.0), (4, 3.0), (5, 4.0)]


def test_minimised_run_picks_the_lowest_score(tmp_path: Path):
    report = analyse_static(load_trace(
        build_run(tmp_path / "run", LINEAGE_RUN, direction="minimize")))
    # The seed (1.0) is the best: depth 0, found at iteration 0, every child is a dead branch.
    assert report.best_id == "1" and report.lineage_depth == 0
    assert report.normalised_best_iteration == 0.0
    assert report.dead_branch_share == 1.0


def test_incorrect_programs_never_count_as_best(tmp_path: Path):
    from trace_builders import Program

    programs = [Program(None, 0, "x = 1\n", 1.0),
                Program(1, 1, "x = 9\n", 9.0, status="incorrect"),
                Program(1, 2, "x = 2\n", 2.0)]
    report = analyse_static(load_trace(build_run(tmp_path / "run", programs)))
    assert report.best_id == "3" and report.dead_branch_share == pytest.approx(0.5)
    assert report.best_so_far == [(0, 1.0), (1, 1.0), (2, 2.0)]


def test_run_without_a_correct_program(tmp_path: Path):
    from trace_builders import Program

    programs = [Program(None, 0, "x = 1\n", None, status="incorrect")]
    report = analyse_static(load_trace(build_run(tmp_path / "run", programs)))
    assert report.best_id is None and report.lineage_depth is None
    assert report.dead_branch_share is None
