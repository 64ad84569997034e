"""Strategy tags: which family (greedy, simulated annealing, ...) and key idea each correct
program has, as the strategy tagger (``strategy_tagger.py``) stored them.

Each tag is a ``strategy_tagged`` event; :class:`TagBook` is the tags in memory, read back from
those events (a resumed or replayed run keeps its tags without asking again). A tag keeps the
model's raw family next to the family it resolved to, so the vocabulary
(``strategy_vocabulary.py``) is rebuilt by replaying the raw names in order, and a name promoted
to a family later re-labels the programs that were given it before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cambrian.core.events import Event, event_kind
from cambrian.meta.strategy_vocabulary import UNTAGGED, StrategyVocabulary
from cambrian.store.store import Store


@event_kind("strategy_tagged")
@dataclass(frozen=True)
class StrategyTagged(Event):
    """An LLM tagged a correct program with its strategy family and key idea."""

    candidate_id: int
    family: str  # the family it resolved to when tagged ("other": a name not yet adopted)
    key_idea: str
    raw_family: str = ""  # what the model wrote
    insisted: bool = False  # the model repeated an unknown name after seeing the vocabulary
    context_id: int | None = None  # the (last) call of the tagging, in the ledger


@dataclass(frozen=True)
class Tag:
    candidate_id: int
    raw_family: str
    key_idea: str
    insisted: bool = False


TagListener = Callable[[Tag], None]


class TagBook:
    """Every program's tag and the vocabulary they built; ``version`` grows with each tag, so
    a reader can tell when what it derived from the book is out of date."""

    def __init__(self, promote_after: int = 2) -> None:
        self.vocabulary = StrategyVocabulary(promote_after=promote_after)
        self.tags: dict[int, Tag] = {}
        self.version = 0
        self.listeners: list[TagListener] = []

    @classmethod
    def from_events(cls, events: list[StrategyTagged], promote_after: int = 2) -> TagBook:
        book = cls(promote_after)
        for event in events:
            book.add(Tag(event.candidate_id, event.raw_family or event.family, event.key_idea,
                         event.insisted))
        return book

    @classmethod
    def from_store(cls, store: Store, promote_after: int = 2) -> TagBook:
        return cls.from_events(store.events.of_type(StrategyTagged), promote_after)

    def add(self, tag: Tag) -> str:
        """Take in one tag (a program tagged again keeps its latest); its family now."""
        family = self.vocabulary.observe(tag.raw_family, insisted=tag.insisted)
        self.tags[tag.candidate_id] = tag
        self.version += 1
        for listener in self.listeners:
            listener(tag)
        return family

    def __contains__(self, candidate_id: object) -> bool:
        return candidate_id in self.tags

    def __len__(self) -> int:
        return len(self.tags)

    def family(self, candidate_id: int) -> str:
        """The program's family now ("untagged" when it has no tag)."""
        tag = self.tags.get(candidate_id)
        return UNTAGGED if tag is None else self.vocabulary.resolve(tag.raw_family)

    def key_idea(self, candidate_id: int) -> str:
        tag = self.tags.get(candidate_id)
        return "" if tag is None else tag.key_idea

    def families(self) -> dict[int, str]:
        """Every tagged program's family now."""
        return {i: self.vocabulary.resolve(t.raw_family) for i, t in self.tags.items()}
