"""The strategy vocabulary: free-text families normalised, synonyms mapped, a new family
adopted only once seen twice or insisted on, and rebuilt the same from the stored raw names."""

from __future__ import annotations

import pytest

from cambrian.meta.strategy_tags import StrategyTagged, Tag, TagBook
from cambrian.meta.strategy_vocabulary import (
    HYBRID,
    OTHER,
    UNTAGGED,
    StrategyVocabulary,
    normalise_text,
)


@pytest.mark.parametrize("raw, family", [
    ("Greedy", "greedy"),
    ("  GREEDY construction. ", "greedy"),
    ("SA", "simulated annealing"),
    ("Simulated-Annealing approach", "simulated annealing"),
    ("simulated_annealing", "simulated annealing"),
    ("annealing", "simulated annealing"),
    ("Hill climbing", "local search"),
    ("2-opt", "local search"),
    ("DP", "dynamic programming"),
    ("Dynamic Programming algorithm", "dynamic programming"),
    ("memoization", "dynamic programming"),
    ("Beam Search", "beam search"),
    ("brute-force", "exhaustive search"),
    ("Monte Carlo", "random search"),
    ("genetic algorithm", "evolutionary"),
    ("greedy with simulated annealing refinement", HYBRID),
    ("N/A", OTHER),
    ("", OTHER),
])
def test_free_text_is_normalised_to_a_family(raw: str, family: str):
    assert StrategyVocabulary().observe(raw) == family


def test_normalise_text_lowers_and_drops_punctuation():
    assert normalise_text("  Tabu_Search!! (v2) ") == "tabu search v2"


def test_a_new_family_joins_after_two_sightings_and_relabels_the_first():
    vocabulary = StrategyVocabulary(promote_after=2)
    assert vocabulary.observe("Tabu search") == OTHER  # once: not yet a family
    assert vocabulary.resolve("Tabu search") == OTHER
    assert vocabulary.proposed == {"tabu search": 1}
    assert vocabulary.observe("tabu-search method") == "tabu search"  # twice: adopted
    assert vocabulary.known("tabu search") and not vocabulary.proposed
    assert vocabulary.resolve("Tabu Search") == "tabu search"
    assert "tabu search" in vocabulary.names() and vocabulary.names()[-1] == OTHER


def test_a_family_the_model_insists_on_joins_at_once():
    vocabulary = StrategyVocabulary(promote_after=5)
    assert vocabulary.observe("Lagrangian relaxation", insisted=True) == "lagrangian relaxation"
    assert vocabulary.observe("lagrangian relaxation") == "lagrangian relaxation"


def test_the_tag_book_rebuilds_the_vocabulary_from_stored_tags():
    events = [StrategyTagged(candidate_id=1, family="greedy", key_idea="largest first",
                             raw_family="Greedy"),
              StrategyTagged(candidate_id=2, family=OTHER, key_idea="tabu list of moves",
                             raw_family="Tabu search"),
              StrategyTagged(candidate_id=3, family="tabu search", key_idea="aspiration",
                             raw_family="tabu search")]
    book = TagBook.from_events(events, promote_after=2)
    # Program 2's tag was "other" when stored; the name was adopted since, so it moved.
    assert book.families() == {1: "greedy", 2: "tabu search", 3: "tabu search"}
    assert book.family(4) == UNTAGGED and book.key_idea(2) == "tabu list of moves"
    seen = []
    book.listeners.append(seen.append)
    version = book.version
    assert book.add(Tag(4, "beam", "keep 8 partial solutions")) == "beam search"
    assert book.version == version + 1 and seen and seen[0].candidate_id == 4
