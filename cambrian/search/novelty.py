"""Novelty rejection sampling (seed 000 §3.2).

The mutable code of a proposal is embedded and compared (cosine) with the programs already on
the same island. Above the threshold the exact tests come first (``novelty_exact.py``): a
proposal whose code equals its nearest neighbour's but for comments and layout, or (Python) whose
normal form is the same (docstrings and local variable names aside too), is rejected outright;
a pair the judge has seen is given its cached verdict; any other is judged by an LLM novelty
judge (``novelty.judge``; ``novelty_judge.py``) when there is one and, under
``novelty.judge_when: cost`` (the default), when the evaluation it may save is measured to cost
more than the call (``novelty_cost.py``; else the near-copy passes, to be evaluated, its notes
saying why: ``decided: cost``); when there is no judge it passes under
the automatic threshold (the embedding alone cannot tell a near-copy from a changed constant)
and is rejected under a threshold the user set. A rejected proposal, also one the judge gave no
verdict on under a threshold the user set (its error is stored and logged), is stored with its
reason, and the engine samples a new one (up to ``novelty.max_attempts`` rejections per
generation). A judge that gives no verdict is taken as absent for a while: under the automatic
threshold the code decides, and the judge is not asked again before 2, 4, 8 ... 64 more
checks.

Every island's index starts with the initial program; a program that migrates, or seeds a new
island, is added to that island's index too (it stays in its old island's index: the programs
there descend from it).

Every check's verdict says what decided it (``decided`` in the candidate's notes: ``embedding``
below the threshold, ``layout``, ``normal form``, ``cache``, ``judge``, ``cost`` when evaluating
is cheaper than asking, ``code`` when no judge is asked; under ``judge_when: cost`` the
comparison is in the notes' ``cost``); the ledger counts the judge's calls under the purpose
``novelty``.

The per-island index (``similarity_index.py``) scans an island exactly up to 65,536 programs and
past that ranks only the programs whose sign signatures lie close to the proposal's, which finds
every program above the threshold (bar a chance under 1e-9 at the threshold itself).
``benchmarks/overhead.py`` and ``benchmarks/nn_alternatives.py`` measure it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from cambrian.config import BudgetConfig, NoveltyConfig, RunConfig
from cambrian.core.events import Event, NoveltyJudgeError
from cambrian.core.hooks import LoopHook
from cambrian.lang.languages import Language, as_language
from cambrian.llm.base import GenerationParams, LLMRequest, Message
from cambrian.llm.embeddings import Embedder, LocalEmbedder, OpenAIEmbedder
from cambrian.llm.gateway import LLMGateway
from cambrian.mutate.filters import FilterVerdict, ProposedChild
from cambrian.search import index_files
from cambrian.search.algorithm_events import IslandSpawned, Migration
from cambrian.search.index_files import IndexFiles
from cambrian.search.novelty_cost import JudgeCostModel, JudgeCosts
from cambrian.search.novelty_exact import CodeKeys, VerdictCache
from cambrian.search.novelty_judge import (
    JUDGE_GRAMMAR,
    JUDGE_MAX_TOKENS,
    judge_prompt,
    parse_judge_reply,
)
from cambrian.search.side_work import backoff
from cambrian.search.similarity_index import SimilarityIndex
from cambrian.store.recorder import Recorder
from cambrian.store.rows import CandidateRow
from cambrian.task.blocks import block_contents

__all__ = ["JUDGE_GRAMMAR", "NoveltyFilter", "NoveltyIndexing", "NoveltyVerdict",
           "SimilarityIndex", "build_novelty_filter"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NoveltyVerdict:
    novel: bool
    vector: np.ndarray
    similarity: float | None = None
    nearest_id: int | None = None
    reason: str = ""
    judge_context_id: int | None = None
    decided: str = "embedding"  # embedding, layout, normal form, cache, judge, cost, code
    cost: str = ""  # judge_when: cost: the comparison that asked the judge or skipped it


class NoveltyFilter:
    """A child filter (``cambrian/mutate/filters.py``) named ``novelty``."""

    name = "novelty"

    def __init__(
        self,
        config: NoveltyConfig,
        embedder: Embedder,
        recorder: Recorder,
        gateway: LLMGateway | None = None,
        judge_label: str | None = None,
        *,
        num_islands: int = 1,
        initial_id: int = 1,
        language: Language | str = "python",
        budget: BudgetConfig | None = None,
    ) -> None:
        """``judge_label``: the model of the LLM novelty judge (None: no judge); ``budget``:
        the run's caps (their ratio prices the judge's USD under ``judge_when: cost``)."""
        self.config = config
        self.language = as_language(language)
        self.threshold = resolved_threshold(config, judge_label is not None)
        self.embedder = embedder
        self.recorder = recorder
        self.store = recorder.store
        self.gateway = gateway
        self.judge_label = judge_label
        self.num_islands = num_islands
        self.initial_id = initial_id
        self.index = SimilarityIndex()
        self._files: IndexFiles | None = None  # the index kept beside the store, for resumes
        self._saved_rows = -1  # rows of the index when its files were last written
        self.loaded_rows = 0  # rows the last restore took from the files (0: rebuilt)
        self.keys = CodeKeys(self.language)
        self.verdicts = VerdictCache()  # the judge's, per (nearest program, proposal)
        self.costs: JudgeCosts | None = (JudgeCostModel(self.store, judge_label, budget)
                      if judge_label is not None and config.judge_when == "cost" else None)
        self._vectors: dict[str, np.ndarray] = {}  # of children checked, until accepted
        self._initial_indexing: asyncio.Future[None] | None = None
        # The judge backs off after replies without a verdict (a judge model that cannot
        # answer would otherwise cost a call for every proposal above the threshold): it is
        # not asked again before 2, 4, 8 ... 64 more checks; a verdict resets that.
        self._checks = 0
        self._judge_failures = 0
        self._judge_retry_at = 0
        warm_up = getattr(embedder, "warm_up", None)
        if warm_up is not None:  # load the model in the background from now on
            warm_up()

    # ------------------------------------------------------------------ index

    @property
    def files(self) -> IndexFiles:
        if self._files is None:
            self._files = IndexFiles.of(self.store)
        return self._files

    def restore(self) -> None:
        """Rebuild the index: from the index files beside the store when they describe it
        (``index_files.py``; then only the embeddings and island events after them are read),
        else from every stored embedding and the selector's island events."""
        embeddings_after = events_after = 0
        self.index = SimilarityIndex()
        try:
            index, header = self.files.load(self.index.seed)
            index_files.check(index, header, self.store, self.embedder.name, self._described())
            self.index, self._saved_rows = index, len(index)
            self.loaded_rows = len(index)
            embeddings_after = int(header["embeddings_through"])
            events_after = int(header["events_through"])
        except (index_files.Unusable, OSError, ValueError, KeyError, TypeError) as exc:
            self.files.forget()
            self.index, self._saved_rows, self.loaded_rows = SimilarityIndex(), -1, 0
            (log.info if self.files.header() is None else log.warning)(
                "resume: the novelty index files are not usable (%s); rebuilding the index "
                "from the store", exc)
        ids, islands, vectors = self.store.embeddings.table(self.embedder.name, embeddings_after)
        if len(ids):
            home = np.asarray(islands)
            for island in sorted(set(islands)):
                if len(set(islands)) == 1:  # one island: the matrix as it was read
                    self.index.add_many(island, ids, vectors)
                    break
                rows = np.flatnonzero(home == island)
                self.index.add_many(island, [ids[row] for row in rows], vectors[rows])
            if self.initial_id in ids:  # the initial program sits on every island
                vector = vectors[ids.index(self.initial_id)]
                for target in self._islands_of(self.initial_id, 0):
                    self.index.add(target, self.initial_id, vector)
        for stored in self.store.events.list(Migration, IslandSpawned, after_id=events_after):
            self.follow(stored.event)

    def _described(self) -> dict[str, Any]:
        """What the index files must have been made for."""
        identity = self.store.runs.identity()
        return {"run_id": identity[0] if identity else None, "model": self.embedder.name,
                "num_islands": self.num_islands, "initial_id": self.initial_id}

    def save_index(self) -> None:
        """Write the index files (the rows added since they were last written or read), when
        the index holds exactly the store's embeddings up to its newest program."""
        count, through = self.index.coverage()
        header = self.files.header()
        if (len(self.index) == self._saved_rows and header is not None
                and header.get("token") == self.files.token):
            return  # nothing added since they were written or read
        if self.store.embeddings.count(self.embedder.name, through) != count:
            log.debug("novelty index files not written: the index and the store differ")
            return
        try:
            self.files.save(self.index, {**self._described(), "embeddings": count,
                                         "embeddings_through": through,
                                         "events_through": self.store.events.last_id()})
        except OSError as exc:
            log.warning("novelty index files not written: %s", exc)
            self.files.forget()
            return
        self._saved_rows = len(self.index)

    def _islands_of(self, candidate_id: int, island: int) -> range | list[int]:
        return range(self.num_islands) if candidate_id == self.initial_id else [island]

    def start_indexing(self, initial: CandidateRow) -> None:
        """``index_initial`` in the background: the first proposal's LLM call does not wait
        for the embedding model to load (seconds, for the bundled one); the first novelty check,
        which comes after that call, does."""
        self._initial_indexing = asyncio.ensure_future(self.index_initial(initial))

    async def _indexed(self) -> None:
        if self._initial_indexing is not None:
            await asyncio.shield(self._initial_indexing)

    async def close(self) -> None:
        """Stop indexing the initial program if it is still under way (the run ends)."""
        if self._initial_indexing is not None and not self._initial_indexing.done():
            self._initial_indexing.cancel()
            await asyncio.gather(self._initial_indexing, return_exceptions=True)

    async def index_initial(self, initial: CandidateRow) -> None:
        """Put the initial program on every island's index (embedding it once)."""
        vector = self.index.vector(initial.id)
        if vector is None:
            vector = await self._embed(initial.source or "")
            self.store.embeddings.add(initial.id, self.embedder.name, vector)
        for island in range(self.num_islands):
            self.index.add(island, initial.id, vector)

    def follow(self, event: Event) -> None:
        """A selector event: a migrated program, or the seed of a new island, joins that
        island's index (programs never embedded, e.g. LLM-free children, are skipped)."""
        if isinstance(event, Migration):
            arrivals = [(m["to_island"], m["candidate_id"]) for m in event.moves]
        elif isinstance(event, IslandSpawned):
            arrivals = [(event.island, event.seed_id)]
        else:
            return
        for island, candidate_id in arrivals:
            vector = self.index.vector(int(candidate_id))
            if vector is not None:
                self.index.add(int(island), int(candidate_id), vector)

    def remember(self, candidate_id: int, island: int, vector: np.ndarray) -> None:
        self.store.embeddings.add(candidate_id, self.embedder.name, vector)
        for target in self._islands_of(candidate_id, island):
            self.index.add(target, candidate_id, vector)

    # ------------------------------------------------------------------ as a child filter

    async def check_child(self, child: ProposedChild, enforce: bool) -> FilterVerdict:
        verdict = await self.check(child.source, child.island, use_judge=enforce)
        notes = {"similarity": verdict.similarity, "nearest": verdict.nearest_id,
                 "decided": verdict.decided}
        if verdict.cost:
            notes["cost"] = verdict.cost
        if not verdict.novel and enforce:
            return FilterVerdict(verdict.reason, {**notes,
                                                  "judge_context": verdict.judge_context_id})
        self._vectors[child.source] = verdict.vector
        return FilterVerdict(None, notes)

    def accepted(self, candidate_id: int, child: ProposedChild, verdict: FilterVerdict) -> None:
        vector = self._vectors.pop(child.source, None)
        if vector is not None:
            self.remember(candidate_id, child.island, vector)

    # ------------------------------------------------------------------ decisions

    async def _embed(self, source: str) -> np.ndarray:
        return (await self.embedder.embed(["\n".join(block_contents(source))]))[0]

    async def check(self, source: str, island: int, *, use_judge: bool = True) -> NoveltyVerdict:
        """``use_judge=False`` when the verdict will not be used (the generation has spent its
        rejections): no judge call is spent on it."""
        vector = await self._embed(source)
        await self._indexed()
        self._checks += 1
        nearest = self.index.nearest(island, vector, at_least=self.threshold)
        if nearest is None or nearest[0] <= self.threshold:
            return NoveltyVerdict(True, vector, *(nearest or (None, None)))
        similarity, nearest_id = nearest
        too_similar = f"too similar to program {nearest_id} (cosine {similarity:.3f})"
        existing = self.store.candidates.get(nearest_id).source
        same = None if existing is None else self.keys.same_code(source, existing)
        if same is not None:
            return NoveltyVerdict(False, vector, similarity, nearest_id, f"{too_similar}: {same}",
                                  decided="layout" if "names" not in same else "normal form")
        judge_resting = self._checks < self._judge_retry_at
        if (self.judge_label is None or judge_resting) and self.config.threshold == "auto":
            # The embedding alone cannot tell a near-copy from a changed number or one changed
            # line of a long program (see AUTO_THRESHOLD_WITHOUT_JUDGE): the code decides. A
            # threshold the user set is taken at its word.
            return NoveltyVerdict(True, vector, similarity, nearest_id, decided="code")
        if self.judge_label is None or not use_judge or judge_resting:
            return NoveltyVerdict(False, vector, similarity, nearest_id, too_similar,
                                  decided="code")
        pair = (self.keys.key(existing or ""), self.keys.key(source))
        cached = self.verdicts.get(*pair)
        if cached is not None:
            reason = "" if cached else (f"{too_similar} and the novelty judge found no "
                                        "meaningful difference (its verdict on the same change)")
            return NoveltyVerdict(cached, vector, similarity, nearest_id, reason, decided="cache")
        cost = self.costs.compare(source) if self.costs is not None else None
        if cost is not None and not cost.ask:  # the evaluation it would save costs less
            return NoveltyVerdict(True, vector, similarity, nearest_id, decided="cost",
                                  cost=cost.reason)
        costed = cost.reason if cost is not None else ""
        novel, context_id, problem, skipped = await self._ask_judge(source, existing or "")
        if skipped:
            return NoveltyVerdict(False, vector, similarity, nearest_id,
                                  f"{too_similar}; the novelty judge was not asked: {skipped}",
                                  decided="code")
        if problem:
            self._judge_failures += 1
            self._judge_retry_at = self._checks + backoff(self._judge_failures)
            log.warning("novelty judge gave no verdict (context %s): %s; not asked again for "
                        "%d checks", context_id, problem, self._judge_retry_at - self._checks)
            self.recorder.emit(NoveltyJudgeError(context_id=context_id, nearest_id=nearest_id,
                                                 error=problem))
            if self.config.threshold == "auto":  # as without a judge: the code decided above
                return NoveltyVerdict(True, vector, similarity, nearest_id, "", context_id,
                                      decided="code", cost=costed)
            reason = f"{too_similar}; the novelty judge gave no verdict ({problem})"
        else:
            self._judge_failures, self._judge_retry_at = 0, 0
            self.verdicts.put(*pair, novel)
            reason = "" if novel else f"{too_similar} and the novelty judge found no meaningful difference"
        return NoveltyVerdict(novel, vector, similarity, nearest_id, reason, context_id,
                              decided="judge", cost=costed)

    async def _ask_judge(self, source: str,
                         existing: str) -> tuple[bool, int | None, str, str | None]:
        """(novel, context id, problem, budget cap that forbade the call); a problem (failed
        call, reply without a verdict) means the judge did not decide and the embedding's
        verdict stands."""
        assert self.gateway is not None and self.judge_label is not None
        request = LLMRequest(
            (Message("user", judge_prompt(existing, source, text=self.language.text)),),
            GenerationParams(temperature=0.0, max_tokens=JUDGE_MAX_TOKENS, grammar=JUDGE_GRAMMAR))
        call = await self.gateway.call("novelty", self.judge_label, request, in_proposal=True)
        if call.skipped is not None:
            return False, None, "", call.skipped
        if call.response is None:
            return False, call.context_id, call.error, None
        verdict = parse_judge_reply(call.response.text)
        if verdict is None:
            return (False, call.context_id,
                    f"unreadable reply {call.response.text.strip()[:80]!r}", None)
        return verdict, call.context_id, "", None


class NoveltyIndexing(LoopHook):
    """The novelty filter's part in the loop: its index rebuilt at the session's start (from
    its files beside the store when they are usable, else from the stored embeddings), the
    initial program indexed once the other preparations are done (it may be a first program the
    LLM wrote; indexing runs in the background and the first check waits for it), its files
    written with each resume snapshot, and indexing stopped when the session ends."""

    name = "novelty"
    blocks_proposals = False

    def __init__(self, novelty: NoveltyFilter) -> None:
        self.filter = novelty

    def restore(self) -> None:
        self.filter.restore()

    def checkpoint(self) -> None:
        self.filter.save_index()

    def state(self) -> dict[str, Any]:
        return {"verdicts": self.filter.verdicts.state()} if len(self.filter.verdicts) else {}

    def load_state(self, state: dict[str, Any]) -> None:
        self.filter.verdicts.load(state.get("verdicts", []))

    async def prepare(self) -> None:
        self.filter.start_indexing(self.filter.store.candidates.get(self.filter.initial_id))

    async def close(self) -> None:
        await self.filter.close()


AUTO_THRESHOLD_WITH_JUDGE = 0.95  # seed 000 Appendix B
# Without a judge only near-copies are refused: with MiniLM, edits of one to three lines that
# changed what the program does measured 0.996-0.997 on circle packing. Above it the code itself
# decides (refused only when comments or layout alone differ): on the 120-line contest program a
# new formula on one line measured 0.99988 and a changed constant 0.99999, as averaging the
# chunk embeddings of a long program dilutes one changed chunk and MiniLM barely sees numbers.
AUTO_THRESHOLD_WITHOUT_JUDGE = 0.999


def resolved_threshold(config: NoveltyConfig, has_judge: bool) -> float:
    if config.threshold != "auto":
        return float(config.threshold)
    return AUTO_THRESHOLD_WITH_JUDGE if has_judge else AUTO_THRESHOLD_WITHOUT_JUDGE


def build_novelty_filter(config: RunConfig, recorder: Recorder, gateway: LLMGateway,
                         language: Language | str = "python") -> NoveltyFilter | None:
    settings = config.novelty
    if not settings.enabled:
        return None
    if settings.embedding == "local":
        embedder: Embedder = LocalEmbedder.shared()
    else:
        key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        embedder = OpenAIEmbedder(settings.embedding_model, settings.base_url, key)
    judge: str | None = None
    if settings.judge is not False:
        label = gateway.label(settings.judge_model, "novelty.judge_model")
        if settings.judge is True or not gateway.capabilities(label).local:
            judge = label  # auto: remote judges only (NoveltyConfig)
    return NoveltyFilter(settings, embedder, recorder, gateway, judge,
                         num_islands=config.database.num_islands, language=language,
                         budget=config.budget)
