"""The strategy tagger (seed 002 §10.4 "Strategy Tagging"): a loop hook whose side step asks a
cheap model which strategy family (greedy, beam search, simulated annealing, ...) and key idea
each correct program has.

The call is small: the program's EVOLVE-BLOCKs (or its first lines) only, a one-line reply
``FAMILY: <family> | IDEA: <key idea>`` (a grammar holds a local model to it) and a small reply
budget (``strategy_prompts.py``). The family is normalised to the vocabulary
(``strategy_vocabulary.py``); a name the vocabulary does not know is shown the vocabulary once
more (``niches.confirm_new``; not to a local model, which would pick the first listed), and if
the model repeats it, it joins. Each tag is stored at once as a ``strategy_tagged`` event
(``strategy_tags.py``), so a resumed run tags only what is still untagged. A reply that does not
parse fails the step (the loop backs off), never the run; a program whose replies failed twice
in a session is left untagged until the next session.
"""

from __future__ import annotations

from cambrian.config.niches import NichesConfig
from cambrian.core.events import Event
from cambrian.core.hooks import LoopHook, StepFailed
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.llm.base import GenerationParams, LLMRequest, Message
from cambrian.llm.gateway import LLMGateway
from cambrian.meta.strategy_prompts import (
    TAG_GRAMMAR,
    ParsedTag,
    TagReplyError,
    code_excerpt,
    confirm_prompt,
    parse_tag_reply,
    tag_messages,
)
from cambrian.meta.strategy_tags import StrategyTagged, Tag, TagBook
from cambrian.store.recorder import Recorder

PURPOSE = "strategy_tag"
MAX_ATTEMPTS = 2  # failed taggings of one program in a session before it is left alone


class StrategyTagger(LoopHook):
    """Tags the correct programs that have no tag, best first, ``per_step`` per side step."""

    name = "strategy-tagger"
    blocks_proposals = False  # selection works on untagged programs too

    def __init__(self, settings: NichesConfig, gateway: LLMGateway, recorder: Recorder,
                 model_label: str, objective: Objective, book: TagBook,
                 fence: str = "") -> None:
        self.settings = settings
        self.gateway = gateway
        self.recorder = recorder
        self.store = recorder.store
        self.model_label = model_label
        self.objective = objective
        self.book = book
        self.fence = fence
        self.failures: dict[int, int] = {}  # candidate id -> failed taggings this session
        self.grammar = TAG_GRAMMAR if gateway.capabilities(model_label).grammar else None

    def restore(self) -> None:
        """Take in the tags stored since the book was read (none, unless the book was made
        before the store was written to)."""
        for event in self.store.events.of_type(StrategyTagged):
            if event.candidate_id not in self.book:
                self.book.add(Tag(event.candidate_id, event.raw_family or event.family,
                                  event.key_idea, event.insisted))

    def untagged(self) -> list[int]:
        """Correct programs without a tag (and not given up on), best first."""
        scores = self.store.candidates.scores(CandidateStatus.CORRECT)
        waiting = [(i, s) for i, s in scores.items() if s is not None and i not in self.book
                   and self.failures.get(i, 0) < MAX_ATTEMPTS]
        waiting.sort(key=lambda item: (-self.objective.fitness(item[1]), item[0]))
        return [i for i, _ in waiting]

    def due(self, evaluated: int) -> bool:
        return bool(self.untagged())

    async def step(self, evaluated: int) -> list[Event]:
        """Tag up to ``per_step`` programs; a failure stops the step (what was tagged stays)."""
        done = 0
        for candidate_id in self.untagged()[:self.settings.per_step]:
            try:
                await self.tag(candidate_id)
            except TagReplyError as exc:
                self.failures[candidate_id] = self.failures.get(candidate_id, 0) + 1
                raise StepFailed(f"program {candidate_id}: {exc}") from None
            done += 1
        if not done:
            raise StepFailed("no program to tag")
        return []

    async def _ask(self, messages: tuple[Message, ...]) -> tuple[str, int | None]:
        request = LLMRequest(messages, GenerationParams(
            temperature=0.0, max_tokens=self.settings.max_tokens, grammar=self.grammar))
        call = await self.gateway.call(PURPOSE, self.model_label, request)
        if call.response is None:  # not the program's fault: it is not counted against it
            raise StepFailed(call.skipped or call.error or "the call failed")
        return call.response.text, call.context_id

    async def tag(self, candidate_id: int) -> StrategyTagged:
        """Ask for one program's tag, store it and add it to the book."""
        source = self.store.candidates.get(candidate_id).source or ""
        families = self.book.vocabulary.names()
        small = self.grammar is not None  # a local model: worked examples, no list to confirm
        first = tag_messages(code_excerpt(source, self.settings.max_lines), families,
                             self.fence, examples=small)
        text, context_id = await self._ask(first)
        parsed = parse_tag_reply(text)
        vocabulary = self.book.vocabulary
        insisted = False
        if (self.settings.confirm_new and not small
                and vocabulary.canonical(parsed.family) is None
                and vocabulary.proposal(parsed.family)):
            name = vocabulary.proposal(parsed.family)
            again, context_id = await self._ask(first + (
                Message("assistant", text), Message("user", confirm_prompt(name, families))))
            second = parse_tag_reply(again)
            insisted = vocabulary.proposal(second.family) == name \
                and vocabulary.canonical(second.family) is None
            parsed = ParsedTag(second.family, second.key_idea or parsed.key_idea)
        family = self.book.add(Tag(candidate_id, parsed.family, parsed.key_idea, insisted))
        event = StrategyTagged(candidate_id=candidate_id, family=family,
                               key_idea=parsed.key_idea, raw_family=parsed.family,
                               insisted=insisted, context_id=context_id)
        self.recorder.emit(event)
        self.failures.pop(candidate_id, None)
        return event
