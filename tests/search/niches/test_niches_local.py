"""The strategy tagger on the real embedded 0.5B model (slow: marked ``local_llm``): a greedy
and an annealing program, tagged through the gateway with the grammar and worked examples, land
in different families, one call each."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cambrian.config import LLMConfig, ModelConfig
from cambrian.config.niches import NichesConfig
from cambrian.core.evaluation import EvaluationResult
from cambrian.core.objective import Objective
from cambrian.core.status import CandidateStatus
from cambrian.llm.factory import build_providers
from cambrian.llm.gateway import LLMGateway
from cambrian.meta.strategy_tagger import PURPOSE, StrategyTagger
from cambrian.meta.strategy_tags import StrategyTagged, TagBook
from cambrian.store.recorder import Recorder
from cambrian.store.rows import NewCandidate
from cambrian.store.store import Store

GREEDY = '''import math

# EVOLVE-BLOCK-START
def tour(points):
    """Visit every point: always go to the nearest point not visited yet."""
    order = [0]
    left = set(range(1, len(points)))
    while left:
        here = points[order[-1]]
        nearest = min(left, key=lambda i: math.dist(here, points[i]))
        order.append(nearest)
        left.remove(nearest)
    return order
# EVOLVE-BLOCK-END
'''

ANNEALING = '''import math
import random

# EVOLVE-BLOCK-START
def tour(points, steps=20000):
    """Random 2-swap moves; a worse tour is accepted with probability exp(-delta / t) while
    the temperature t cools down geometrically."""
    order = list(range(len(points)))
    length = lambda o: sum(math.dist(points[o[i]], points[o[i - 1]]) for i in range(len(o)))
    current = length(order)
    t = 10.0
    for _ in range(steps):
        i, j = sorted(random.sample(range(len(order)), 2))
        candidate = order[:i] + order[i:j + 1][::-1] + order[j + 1:]
        delta = length(candidate) - current
        if delta < 0 or random.random() < math.exp(-delta / t):
            order, current = candidate, current + delta
        t *= 0.9995
    return order
# EVOLVE-BLOCK-END
'''


@pytest.mark.local_llm
def test_the_local_model_tags_a_greedy_and_an_annealing_program_apart(tmp_path: Path):
    store = Store.open(tmp_path / "run", create=True)
    store.runs.create(run_id="r1", task_name="tour", task_dir="/t", direction="minimize",
                      language="python", config={}, seed=0, code_version="test")
    for generation, source in enumerate((GREEDY, ANNEALING)):
        cid = store.candidates.add(NewCandidate(
            generation=generation, island=0, parent_id=None, operator="init",
            status=CandidateStatus.PENDING, language="python", source=source))
        store.evaluations.add(cid, EvaluationResult(status="ok", combined_score=10.0 - cid))
        store.candidates.update(cid, status=CandidateStatus.CORRECT, score=10.0 - cid)
    config = LLMConfig(models=[ModelConfig(name="small", provider="local",
                                           model="qwen2.5-coder-0.5b-instruct",
                                           context_window=4096)])
    providers = build_providers(config)
    recorder = Recorder(store)
    gateway = LLMGateway(config.models, providers, recorder)
    tagger = StrategyTagger(NichesConfig(), gateway, recorder, "small",
                            Objective.of("minimize"), TagBook(), fence="python")
    try:
        asyncio.run(tagger.step(0))
    finally:
        for provider in providers.values():
            close = getattr(provider, "close", None)
            if close is not None:
                close()
    tags = {t.candidate_id: t for t in store.events.of_type(StrategyTagged)}
    assert sorted(tags) == [1, 2]
    assert tags[1].family != tags[2].family, tags
    # The annealing program's family is a stochastic search one (the 0.5B may not say which).
    assert tags[1].family == "greedy", tags
    assert tags[2].family in ("simulated annealing", "local search", "random search"), tags
    assert all(t.key_idea for t in tags.values())
    assert tagger.grammar is not None  # the local model's replies were held to the format
    assert store.contexts.count_by_model(PURPOSE)["small"] == 2  # no confirmation turn
    store.close()
