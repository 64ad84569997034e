"""The niche archive: elites per niche, hall of fame, elite buffer, age-based culling that keeps
niche champions, stagnation, and the same archive rebuilt from a store's rows and tags."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from niche_helpers import book_of, program, settings

from cambrian.config import RunConfig, SearchConfig
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.meta.strategy_tags import StrategyTagged, TagBook
from cambrian.search.algorithm import commit_rng
from cambrian.search.archive import Archive
from cambrian.search.niches.archive import build_archive
from cambrian.search.niches.sampler import NicheInputs
from cambrian.search.niches.selector import NicheSelector
from cambrian.search.niches.view import niche_map
from cambrian.search.registry import make_selector
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.store import Store


def test_elites_per_niche_hall_of_fame_and_elite_buffer():
    programs = [program(1, 1.0), program(2, 5.0), program(3, 4.0), program(4, 3.0),
                program(5, 9.0), program(6, 2.0), program(7, None), program(8, 6.0)]
    families = book_of({1: "greedy", 2: "greedy", 3: "greedy", 4: "greedy",
                        5: "simulated annealing", 6: "simulated annealing"})
    archive = build_archive(programs, families.family, settings(max_per_niche=2, elite_size=3,
                                                                max_age=0))
    assert sorted(archive.niches) == ["greedy", "simulated annealing", "untagged"]
    greedy = archive.niches["greedy"]
    assert [m.id for m in greedy.elites] == [2, 3]  # the best two of four
    assert [m.id for m in greedy.members] == [2, 3, 4, 1]
    assert {f: p.id for f, p in archive.hall_of_fame.items()} == {
        "greedy": 2, "simulated annealing": 5, "untagged": 8}
    assert [p.id for p in archive.elite_buffer] == [5, 8, 2]  # best three overall
    assert archive.niche_of(7) is None  # incorrect: in no niche


def test_old_programs_are_culled_but_a_niche_champion_never_is():
    programs = [program(1, 9.0, generation=0), program(2, 1.0, generation=1),
                program(3, 2.0, generation=2), program(4, 3.0, generation=40),
                program(5, 0.5, generation=60)]
    families = book_of({1: "greedy", 2: "greedy", 3: "local search", 4: "local search",
                        5: "greedy"})
    archive = build_archive(programs, families.family, settings(max_age=50))
    # Newest generation is 60: 1, 2 and 3 are older than 50 generations. 1 is greedy's
    # champion and stays; 3 is not local search's champion (4 is): culled.
    assert archive.culled == frozenset({2, 3})
    assert [m.id for m in archive.niches["greedy"].elites] == [1, 5]
    assert [m.id for m in archive.niches["local search"].elites] == [4]
    assert archive.hall_of_fame["local search"].id == 4
    assert 2 not in [p.id for p in archive.elite_buffer]
    # Off with max_age 0.
    assert build_archive(programs, families.family, settings(max_age=0)).culled == frozenset()


def test_a_culled_program_is_never_drawn_as_a_parent():
    selector = make_selector(RunConfig(search=SearchConfig(algorithm="niches")))
    assert isinstance(selector, NicheSelector)
    selector.attach_niches(NicheInputs(settings(max_age=5, inspirations=0),
                                       book_of({1: "greedy", 2: "greedy", 3: "greedy"})))
    for record in (program(1, 9.0, generation=0), program(2, 8.0, generation=1),
                   program(3, 1.0, generation=20)):
        selector.add(record, commit_rng(0, record.id))
    rng = np.random.default_rng(0)
    parents = {selector.sample(rng).parent_id for _ in range(300)}
    assert parents == {1, 3}  # 2 is old and not the champion; 1 is old but the champion


def test_stagnation_counts_the_children_since_the_champion():
    programs = [program(1, 1.0), program(2, 5.0, parent=1),
                program(3, 4.0, parent=2), program(4, None, parent=2), program(5, 2.0, parent=3),
                program(6, 7.0, parent=1)]
    families = book_of({1: "greedy", 2: "greedy", 3: "greedy", 5: "greedy", 6: "dp"})
    archive = build_archive(programs, families.family, settings(stagnation_window=3, max_age=0))
    greedy = archive.niches["greedy"]
    # Greedy's champion is 2; since then its programs had children 3, 4, 5 and 6 (6 went to
    # another niche but is still a child greedy produced without beating its best).
    assert greedy.champion.id == 2 and greedy.since_best == 4 and greedy.stagnant
    assert not archive.niches["dynamic programming"].stagnant


def _stored_run(tmp_path: Path) -> Store:
    store = Store.open(tmp_path / "run", create=True)
    store.runs.create(run_id="r1", task_name="t", task_dir="/t", direction="minimize",
                      language="python", config={"niches": {"new_family_after": 2}}, seed=0,
                      code_version="test")
    recorder = Recorder(store)
    scores = {1: 10.0, 2: 7.0, 3: 8.0, 4: 3.0, 5: None, 6: 4.0}
    families = {1: "Greedy", 2: "greedy construction", 3: "Tabu search", 4: "SA",
                6: "tabu search"}
    for pid, score in scores.items():
        cid = store.candidates.add(NewCandidate(
            generation=pid, island=0, parent_id=None if pid == 1 else 1,
            operator="init" if pid == 1 else "diff", status=CandidateStatus.PENDING,
            language="python", source=f"x = {pid}\n"))
        store.evaluations.add(cid, EvaluationResult(
            status="ok", combined_score=score, public={},
            extra={"cases": [{"case": "a", "score": pid}, {"case": "b", "score": 1.0}]}))
        store.candidates.update(cid, status=CandidateStatus.CORRECT if score is not None
                                else CandidateStatus.INCORRECT, score=score)
        if pid in families:
            recorder.emit(StrategyTagged(candidate_id=cid, family="", key_idea=f"idea {pid}",
                                         raw_family=families[pid]))
    return store


def test_the_archive_and_niche_map_are_rebuilt_from_the_store(tmp_path: Path):
    store = _stored_run(tmp_path)
    objective = Objective.of("minimize")
    archive = Archive(make_selector(RunConfig(search=SearchConfig(algorithm="niches"))),
                      objective, seed=0)
    records = [archive.replay_record(row) for row in store.candidates.replay_rows()]
    book = TagBook.from_store(store)
    rebuilt = build_archive(records, book.family, settings(max_age=0))
    assert book.families() == {1: "greedy", 2: "greedy", 3: "tabu search", 4: "simulated annealing",
                               6: "tabu search"}
    assert {f: p.id for f, p in rebuilt.hall_of_fame.items()} == {
        "greedy": 2, "tabu search": 6, "simulated annealing": 4}  # minimised: lower is better
    assert records[2].case_scores == {"a": 3.0, "b": 1.0}
    lines = niche_map(store, objective)
    assert [(n.family, n.count, n.best_score, n.best_id) for n in lines] == [
        ("simulated annealing", 1, 3.0, 4), ("tabu search", 2, 4.0, 6), ("greedy", 2, 7.0, 2)]
    assert lines[1].key_idea == "idea 6" and lines[1].elites == [6, 3]
    store.close()
