"""The local model served by Ray actors (``llm.models[].replicas``): the pool's dispatch with
stand-in replicas (no cluster, no model), then the real 0.5B model with one replica on each of
the test cluster's two worker nodes and two proposals in flight."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import ray
from ray import exceptions as ray_errors
from ray_helpers import LocalRayCluster, worker_label
from support.scripted_llm import write_counter_task
from support.store_queries import sql, stored_events

from cambrian.api import start
from cambrian.config import ExecutionConfig, LLMConfig, ModelConfig
from cambrian.evaluate.distributed.cluster import RayCluster
from cambrian.evaluate.distributed.llm_replicas import ModelReplicas, RayModelPool
from cambrian.llm.base import (
    ContextOverflow,
    GenerationParams,
    LLMRequest,
    LLMResponse,
    LLMUnavailable,
    Message,
    Usage,
)
from cambrian.llm.factory import build_providers
from cambrian.store.store import Store

SMALL_MODEL = "qwen2.5-coder-0.5b-instruct"


def replica_model(**extra: object) -> dict[str, object]:
    return {"provider": "local", "model": SMALL_MODEL, "replicas": 2, "n_threads": 1,
            "context_window": 2048, "max_tokens": 64, "temperatures": [0.7], **extra}


# --- the pool's dispatch, with stand-in replicas ------------------------------------------------


class StandIn:
    """An actor handle whose ``complete.remote(request)`` answers after a short wait, or raises
    the next of ``errors`` (a lost worker, the provider's own failure)."""

    def __init__(self, name: str, errors: list[Exception] | None = None) -> None:
        self.name = name
        self.errors = errors or []
        self.requests: list[LLMRequest] = []
        self.running = self.most_running = 0
        self.complete = SimpleNamespace(remote=self._remote)

    def _remote(self, request: LLMRequest) -> Any:
        self.requests.append(request)

        async def answer() -> tuple[LLMResponse, str]:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            try:
                await asyncio.sleep(0.05)
                if self.errors:
                    raise self.errors.pop(0)
                return LLMResponse(self.name, SMALL_MODEL, Usage(), "stop", 0.05), self.name
            finally:
                self.running -= 1

        return answer()


class Driver:  # the driver's provider: name, window, token counts
    model = SMALL_MODEL
    context_window = 2048

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def stand_in_pool(monkeypatch: pytest.MonkeyPatch, *replicas: StandIn) -> RayModelPool:
    config = ModelConfig.model_validate(replica_model(replicas=len(replicas)))
    pool = RayModelPool(config, Driver(), RayCluster(ExecutionConfig(backend="ray")))
    pool._replicas = list(replicas)
    pool._free = asyncio.Queue()
    for index in range(len(replicas)):
        pool._free.put_nowait(index)
    made = iter(range(100))
    monkeypatch.setattr(pool, "_new_replica", lambda index: StandIn(f"new-{next(made)}"))
    return pool


async def test_each_call_goes_to_a_free_replica_with_its_own_seed(monkeypatch):
    first, second = StandIn("a"), StandIn("b")
    pool = stand_in_pool(monkeypatch, first, second)
    replies = await asyncio.gather(*(pool.complete(_ask(f"call {n}", 8)) for n in range(5)))
    assert sorted(r.text for r in replies) == ["a", "a", "a", "b", "b"]
    assert first.most_running == second.most_running == 1  # one call at a time per replica
    assert pool.calls == {0: 3, 1: 2} and pool.served() == {"replica 0 on a": 3,
                                                             "replica 1 on b": 2}
    seeds = [r.params.seed for r in first.requests + second.requests]
    assert None not in seeds and len(set(seeds)) == 5
    assert pool.count_tokens("two words") == 2 and pool.context_window == 2048


async def test_a_lost_replica_is_replaced_once_then_the_call_fails_as_transient(monkeypatch):
    lost = ray_errors.ActorDiedError()
    pool = stand_in_pool(monkeypatch, StandIn("a", [lost]))
    assert (await pool.complete(_ask("hi", 8))).text == "new-0"  # the replacement answered
    assert pool.replaced == 1 and [a.attempt for a in pool.lost] == [1]

    pool = stand_in_pool(monkeypatch, StandIn("a", [lost]))
    monkeypatch.setattr(pool, "_new_replica", lambda index: StandIn("b", [lost]))
    with pytest.raises(LLMUnavailable, match="lost 2 times"):
        await pool.complete(_ask("hi", 8))
    assert pool.replaced == 2 and pool._free is not None and pool._free.qsize() == 1


async def test_the_models_own_failure_reaches_the_gateway_as_itself(monkeypatch):
    overflow = ContextOverflow("the prompt does not fit")
    wrapped = ray_errors.RayTaskError("complete", "traceback", overflow)
    pool = stand_in_pool(monkeypatch, StandIn("a", [wrapped]))
    with pytest.raises(ContextOverflow, match="does not fit"):
        await pool.complete(_ask("hi", 8))
    assert pool.replaced == 0 and not pool.calls
    pool.close()
    with pytest.raises(LLMUnavailable, match="closed"):
        await pool.complete(_ask("hi", 8))


# --- the real model on the test cluster -----------------------------------------------------------


@pytest.mark.local_llm
def test_two_replicas_serve_two_proposal_streams(
        tmp_path: Path, ray_cluster: LocalRayCluster, two_workers: list[str]):
    task = write_counter_task(tmp_path / "task")
    evolution = start(task, run_dir=tmp_path / "run", overrides=[
        "llm.models=[" + json.dumps(replica_model()) + "]",
        "evolution.generations=2", "evolution.max_proposals_in_flight=2",
        "evolution.max_parallel_evaluations=2", "evolution.max_patch_attempts=1",
        "evolution.max_patch_resamples=1", "budget.max_llm_calls=4",
        'evolution.patch_types=["full"]', "evolution.patch_type_probs=[1.0]",
        "mutation.schedule=off",
        "novelty.enabled=false", "meta.enabled=false", "comprehension.enabled=false",
        "execution.backend=ray", f"execution.ray_address={ray_cluster.address}",
        f"execution.worker_dir={tmp_path / 'workers'}"])
    hook = evolution.hooks[0]
    assert isinstance(hook, ModelReplicas)
    pool = hook.pools[SMALL_MODEL]
    assert evolution.ctx.gateway.provider(SMALL_MODEL) is pool
    assert pool.cluster is evolution.executor.cluster  # one connection serves both

    summary = asyncio.run(evolution.run())
    evolution.store.close()

    assert not ray.is_initialized()  # the session's end closed the replicas and the cluster
    assert summary.stop_reason.startswith(("generation budget", "LLM call budget")), \
        summary.stop_reason
    assert set(pool.calls) == {0, 1} and pool.calls.total() == summary.llm_calls, pool.served()
    assert set(pool.nodes.values()) == {worker_label(n) for n in two_workers}  # one per node
    assert not pool.lost
    store = Store.open(tmp_path / "run")
    rows = sql(store, "SELECT params_json, response_text, error, created_at - latency_s, "
                      "created_at FROM contexts WHERE purpose='mutation'").fetchall()
    assert len(rows) == summary.llm_calls and all(text and not error for _, text, error, *_ in rows)
    assert all(json.loads(params)["grammar"] for params, *_ in rows)  # llama.cpp honours it
    calls = sorted((began, ended) for *_, began, ended in rows)
    assert any(later[0] < earlier[1] for earlier, later in zip(calls, calls[1:])), \
        "two calls ran at once"
    assert stored_events(store, "session_end")[-1]["payload"]["reason"] == summary.stop_reason
    store.close()


def _ask(text: str, max_tokens: int) -> LLMRequest:
    return LLMRequest((Message("user", text),),
                      GenerationParams(temperature=0.0, max_tokens=max_tokens))


@pytest.mark.local_llm
async def test_a_lost_replica_is_replaced_and_its_call_sent_again(
        ray_cluster: LocalRayCluster, two_workers: list[str]):
    config = ModelConfig.model_validate(replica_model(replicas=2))
    driver = build_providers(LLMConfig(models=[config]))[config.label]
    cluster = RayCluster(ExecutionConfig(backend="ray", ray_address=ray_cluster.address))
    pool = RayModelPool(config, driver, cluster)
    try:
        first = await pool.complete(_ask("Say hello.", 4))  # the other replica loads meanwhile
        text = "def f(x):\n    return x  # <|im_end|>"
        assert first.text and pool.count_tokens(text) == driver.count_tokens(text)
        call = asyncio.create_task(pool.complete(_ask("Count from 1 to 50.", 24)))
        await asyncio.sleep(1.0)
        busy = next(i for i in range(pool.size) if i != _free_replica(pool))
        ray.kill(pool._replicas[busy], no_restart=True)  # its worker process dies mid-call
        response = await call
        assert response.text
        assert pool.replaced == 1 and [a.attempt for a in pool.lost] == [1]
        assert pool.calls[busy] >= 1
    finally:
        pool.close()
        cluster.close()


def _free_replica(pool: RayModelPool) -> int:
    assert pool._free is not None and pool._free.qsize() == 1
    index = pool._free.get_nowait()
    pool._free.put_nowait(index)
    return index
