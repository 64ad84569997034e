"""Niche-aware parent selection: a stagnant niche loses share, a new niche gets a bonus (checked
exactly and by drawing with a fixed seed), the parent's inspirations are the most distant elites
of other niches, and the prompt note names the parent's strategy."""

from __future__ import annotations

import numpy as np
from niche_helpers import book_of, program, settings

from cambrian.search.niches.archive import build_archive
from cambrian.search.niches.sampler import NicheInputs, NicheSampler, niche_probabilities

FAMILIES = {1: "greedy", 8: "local search", 9: "simulated annealing"}


def _programs():
    # greedy: its champion (1) had six children since, none better: stagnant.
    # local search: a champion with five children (pending), none evaluated yet: neither.
    # simulated annealing: no child yet: new.
    children = [program(i, None, parent=1) for i in range(2, 8)]
    return {p.id: p for p in [program(1, 5.0, children=6), *children,
                              program(8, 5.0, children=5), program(9, 5.0, children=0)]}


def test_stagnant_niches_lose_share_and_new_niches_get_a_bonus():
    config = settings(niche_alpha=0.0, stagnation_window=4, stagnant_share=0.25,
                      new_niche_bonus=1.0, new_niche_proposals=3, max_age=0)
    archive = build_archive(_programs().values(), book_of(FAMILIES).family, config)
    niches = sorted(archive.niches.values(), key=lambda n: n.family)
    assert [(n.family, n.stagnant, n.is_new(3)) for n in niches] == [
        ("greedy", True, False), ("local search", False, False),
        ("simulated annealing", False, True)]
    p = niche_probabilities(niches, config)
    np.testing.assert_allclose(p, np.array([0.25, 1.0, 2.0]) / 3.25)

    sampler = NicheSampler()
    sampler.attach(NicheInputs(config, book_of(FAMILIES)))
    rng = np.random.default_rng(1234)
    programs = _programs()
    parents = [sampler.sample(programs, rng).parent_id for _ in range(4000)]
    shares = {pid: parents.count(pid) / len(parents) for pid in (1, 8, 9)}
    assert abs(shares[1] - 0.25 / 3.25) < 0.02
    assert abs(shares[8] - 1.0 / 3.25) < 0.03
    assert abs(shares[9] - 2.0 / 3.25) < 0.03
    # Without the stagnation penalty and the bonus, the three niches share evenly.
    even = niche_probabilities(niches, settings(niche_alpha=0.0, stagnant_share=1.0,
                                                new_niche_bonus=0.0, max_age=0))
    np.testing.assert_allclose(even, np.full(3, 1 / 3))


def test_better_niches_get_more_parents_and_better_programs_within_a_niche():
    config = settings(niche_alpha=1.0, parent_alpha=1.0, new_niche_bonus=0.0, max_age=0,
                      inspirations=0)
    programs = {p.id: p for p in [program(1, 9.0, children=5), program(2, 1.0, children=5),
                                  program(3, 5.0, children=5)]}
    sampler = NicheSampler()
    sampler.attach(NicheInputs(config, book_of({1: "greedy", 2: "greedy", 3: "dp"})))
    rng = np.random.default_rng(7)
    parents = [sampler.sample(programs, rng).parent_id for _ in range(3000)]
    # greedy ranks first (2/3 of the parents), within it 1 ranks first (2/3 of those).
    assert abs(parents.count(3) / 3000 - 1 / 3) < 0.03
    assert abs(parents.count(1) / 3000 - 4 / 9) < 0.03
    assert abs(parents.count(2) / 3000 - 2 / 9) < 0.03


def test_inspirations_are_the_most_distant_elites_of_other_niches_and_the_note_names_them():
    programs = {
        1: program(1, 9.0, cases={"a": 1.0, "b": 0.0}, children=5, code_length=100),
        2: program(2, 8.0, cases={"a": 1.0, "b": 0.0}, children=5, code_length=100),
        3: program(3, 7.0, cases={"a": 0.0, "b": 1.0}, children=5, code_length=100),
        4: program(4, 2.0, cases={"a": 1.0, "b": 0.1}, children=5, code_length=100),
    }
    book = book_of({1: "greedy", 2: "local search", 3: "simulated annealing", 4: "greedy"})
    sampler = NicheSampler()
    sampler.attach(NicheInputs(settings(inspirations=1, max_age=0), book))
    archive = sampler.archive(programs)
    parent = programs[1]
    chosen = sampler.inspirations(parent, archive.niches["greedy"], archive)
    assert [p.id for p in chosen] == [3]  # same behaviour as 2 would teach less
    note = sampler.note(parent, chosen)
    assert note == ("Strategy of this program: greedy (idea of 1). The other programs shown "
                    "take different approaches (simulated annealing); borrow what could help "
                    "this one.")
    # A single niche: its other elites.
    alone = NicheSampler()
    alone.attach(NicheInputs(settings(inspirations=2, max_age=0), book_of({1: "greedy",
                                                                            4: "greedy"})))
    only = {1: programs[1], 4: programs[4]}
    archive = alone.archive(only)
    assert [p.id for p in alone.inspirations(only[1], archive.niches["greedy"], archive)] == [4]


def test_without_tags_every_correct_program_is_one_untagged_niche():
    sampler = NicheSampler()
    programs = {1: program(1, 1.0), 2: program(2, 3.0), 3: program(3, None)}
    sample = sampler.sample(programs, np.random.default_rng(0))
    assert sample is not None and sample.parent_id in (1, 2) and sample.guidance == ""
    assert list(sampler.archive(programs).niches) == ["untagged"]
    assert NicheSampler().sample({3: program(3, None)}, np.random.default_rng(0)) is None


def test_tied_niches_get_the_same_share():
    from cambrian.search.niches.sampler import tied_ranks

    assert tied_ranks([5.0, 9.0, 5.0, 1.0]).tolist() == [2.5, 1.0, 2.5, 4.0]
    programs = {1: program(1, 5.0, children=5), 2: program(2, 5.0, children=5)}
    archive = build_archive(programs.values(), book_of({1: "greedy", 2: "dp"}).family,
                            settings(max_age=0, niche_alpha=2.0))
    p = niche_probabilities(sorted(archive.niches.values(), key=lambda n: n.family),
                            settings(niche_alpha=2.0))
    np.testing.assert_allclose(p, [0.5, 0.5])


def test_a_stagnant_niche_leans_to_a_new_approach_and_a_new_niche_to_refinement():
    config = settings(niche_alpha=0.0, stagnation_window=4, new_niche_proposals=3, max_age=0,
                      stagnant_intents={"strategy": 3.0}, new_intents={"refinement": 2.0})
    sampler = NicheSampler()
    sampler.attach(NicheInputs(config, book_of(FAMILIES)))
    rng = np.random.default_rng(7)
    programs = _programs()
    mixes = {}
    for _ in range(200):
        sample = sampler.sample(programs, rng)
        mixes[sample.parent_id] = dict(sample.intent_weights)
    # 1: the stagnant greedy niche; 8: local search, neither; 9: the new annealing niche.
    assert mixes == {1: {"strategy": 3.0}, 8: {}, 9: {"refinement": 2.0}}


def test_niche_intent_mixes_name_registered_intents():
    import pytest

    from cambrian.config import RunConfig
    from cambrian.core.errors import ConfigError
    from cambrian.search.build import check_names

    with pytest.raises(ConfigError, match="niches.stagnant_intents: unknown .*'strategi'.*"
                                          "did you mean 'strategy'"):
        check_names(RunConfig.model_validate({"niches": {"stagnant_intents": {"strategi": 2}}}))
