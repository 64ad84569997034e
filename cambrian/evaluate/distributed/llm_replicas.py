"""A local model served by Ray actors (``llm.models[].replicas`` > 1 with
``execution.backend: ray``): N replicas of the model, one per worker, give N proposal streams.

``RayModelPool`` is an ``LLMProvider``: the gateway calls it as it calls the in-process model
(budget, ledger, capabilities and grammar stay the gateway's), and it sends each call to a free
replica, waiting while every replica is busy. A replica is a Ray actor (``ModelReplica``) that
builds the model from the model's config through the provider registry, as the driver would,
and loads it at its first call; a call cancelled on the driver stops its generation on the
worker. A replica whose worker or node is lost is replaced by a new actor and the call is sent
to it once more; lost a second time, the call fails as transient (``LLMUnavailable``).

Placement: one replica per node with CPUs (the alive node holding the fewest replicas; a head
started with ``--num-cpus=0`` gets none), with Ray's default resources for actors, one CPU to
be placed and none held while it runs: a replica never takes the CPU slot of an evaluation,
which on a small cluster would leave evaluations waiting for ever behind the model. The model's own threads
(``n_threads``) share the node with its evaluations, as a local model shares this machine with
local evaluations.

The driver keeps only the model's vocabulary (llama.cpp ``vocab_only``) to count tokens for
prompt fitting, exactly as a replica would, without loading the weights. ``ModelReplicas`` is
the loop hook the composition root adds: it starts the replicas before the first proposal and
ends them when the session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import ray
from ray import exceptions as ray_errors
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from cambrian.config import ExecutionConfig, ModelConfig
from cambrian.core.hooks import LoopHook
from cambrian.evaluate.distributed.cluster import LOST, LostAttempt, RayCluster
from cambrian.evaluate.distributed.worker import worker_label
from cambrian.llm.base import LLMError, LLMProvider, LLMRequest, LLMResponse, LLMUnavailable
from cambrian.llm.providers import PROVIDERS

log = logging.getLogger(__name__)

# A call whose replica (its actor, worker process or node) was lost: replaced, sent again once.
REPLICA_LOST = (ray_errors.RayActorError, *LOST)
ATTEMPTS = 2


class ModelReplica:
    """One copy of the model, inside a Ray actor (async: a cancelled call's task is cancelled,
    which stops llama.cpp at its next token)."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.provider: LLMProvider | None = None
        self._building = asyncio.Lock()

    async def _model(self) -> LLMProvider:
        async with self._building:
            if self.provider is None:
                spec = PROVIDERS.get(self.config.provider)
                try:  # assembles the weights on this node if needed (hash-checked)
                    self.provider = await asyncio.to_thread(spec.build, self.config, None, {})
                except LLMError:
                    raise
                except Exception as error:  # e.g. llama.cpp or the weights missing here
                    raise LLMError(f"{worker_label()}: the model {self.config.label} could not "
                                   f"be built: {type(error).__name__}: {error}") from error
            return self.provider

    async def load(self) -> str:
        """Builds and loads the model; returns where it runs, or why it could not load (a
        warm-up nobody awaits: it never raises)."""
        try:
            model = await self._model()
            await asyncio.to_thread(model.count_tokens, "x")  # loads the weights
        except Exception as error:
            return f"{worker_label()}: {type(error).__name__}: {error}"
        return worker_label()

    async def complete(self, request: LLMRequest) -> tuple[LLMResponse, str]:
        model = await self._model()
        return await model.complete(request), worker_label()


_REPLICA = ray.remote(ModelReplica)


class RayModelPool:
    """An ``LLMProvider`` whose calls run on ``replicas`` Ray actors, each with the model."""

    def __init__(self, config: ModelConfig, driver: LLMProvider, cluster: RayCluster) -> None:
        """``driver``: the model's provider as built on the driver (never asked to generate):
        its name, context window and weights file (for the vocabulary)."""
        self.config = config
        self.driver = driver
        self.cluster = cluster
        self.size = config.replicas
        self.calls: Counter[int] = Counter()  # calls answered, per replica (0..size-1)
        self.nodes: dict[int, str] = {}  # replica -> where its last answer came from
        self.lost: list[LostAttempt] = []  # every call resent because its replica was lost
        self.replaced = 0
        self._replicas: list[Any] = []
        self._placed: dict[int, str] = {}  # replica -> the Ray node id it was placed on
        self._free: asyncio.Queue[int] | None = None
        self._closed = False
        self._count = _token_counter(driver)
        # A call's seed, drawn here in call order: a replica's own sequence starts where
        # every other one's does.
        self._seeds = random.Random(0)

    # ------------------------------------------------------------------ LLMProvider

    @property
    def model(self) -> str:
        return self.driver.model

    @property
    def context_window(self) -> int | None:
        return self.driver.context_window

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.start()
        assert self._free is not None
        if request.params.seed is None:  # else every replica would draw the same seeds
            request = replace(request, params=replace(
                request.params, seed=self._seeds.randrange(2**31)))
        index = await self._free.get()
        try:
            return await self._on_replica(index, request)
        finally:
            self._free.put_nowait(index)

    # ------------------------------------------------------------------ the replicas

    def start(self) -> None:
        """Creates the actors (once) and lets each load its model; returns at once."""
        if self._closed:
            raise LLMUnavailable(f"model {self.config.label}: its replicas were closed")
        if self._replicas:
            return
        self.cluster.connect()
        self._free = asyncio.Queue()
        for index in range(self.size):
            self._replicas.append(self._new_replica(index))
            self._free.put_nowait(index)

    def _new_replica(self, index: int) -> Any:
        actor = _REPLICA.options(  # type: ignore[attr-defined]
            scheduling_strategy=self._placement(index), max_restarts=0, max_task_retries=0,
        ).remote(self.config)
        actor.load.remote()  # a warm-up: the first call need not wait for the weights
        return actor

    def _placement(self, index: int) -> Any:
        """The alive node with CPUs holding the fewest replicas (soft: another one if it is
        gone by then); Ray's own ``SPREAD`` is best effort and may put two on one node."""
        self._placed.pop(index, None)
        nodes = [node["NodeID"] for node in ray.nodes()
                 if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) > 0]
        if not nodes:
            return "SPREAD"
        held = Counter(self._placed.values())
        node = min(nodes, key=lambda n: held[n])
        self._placed[index] = node
        return NodeAffinitySchedulingStrategy(node, soft=True)

    async def _on_replica(self, index: int, request: LLMRequest) -> LLMResponse:
        what = f"model {self.config.label}, replica {index}"
        for attempt in range(1, ATTEMPTS + 1):
            ref = self._replicas[index].complete.remote(request)
            try:
                response, where = await ref
            except asyncio.CancelledError:
                ray.cancel(ref)  # cancels the actor's task: the generation stops
                raise
            except ray_errors.RayTaskError as error:  # the provider's own failure
                cause = getattr(error, "cause", None)
                if isinstance(cause, LLMError):
                    raise cause from None
                raise LLMError(f"{what}: {type(cause or error).__name__}: {cause or error}"
                               ) from None
            except REPLICA_LOST as error:
                text = " ".join(str(error).split())[:300]
                self.lost.append(LostAttempt(what, attempt, text))
                if self._closed:
                    raise LLMUnavailable(f"{what}: the replicas were closed") from None
                self._replace(index)
                if attempt == ATTEMPTS:
                    raise LLMUnavailable(f"{what}: its worker was lost {ATTEMPTS} times; last: "
                                         f"{type(error).__name__}: {text}") from None
                log.warning("%s: worker lost (%s); a new replica takes the call", what,
                            type(error).__name__)
                continue
            self.calls[index] += 1
            self.nodes[index] = where
            return response
        raise AssertionError("unreachable")

    def _replace(self, index: int) -> None:
        if ray.is_initialized():  # ray.kill would start a Ray of its own
            with contextlib.suppress(Exception):  # most often already dead
                ray.kill(self._replicas[index], no_restart=True)
        self._replicas[index] = self._new_replica(index)
        self.replaced += 1

    def served(self) -> dict[str, int]:
        """Calls answered per replica, as "replica I on HOST/NODE" (its latest node)."""
        return {f"replica {i} on {self.nodes.get(i, '?')}": n for i, n in sorted(self.calls.items())}

    def close(self) -> None:
        """Ends the actors (their models' memory with them); a later call fails."""
        self._closed = True
        replicas, self._replicas = self._replicas, []
        if ray.is_initialized():
            for actor in replicas:
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)


def _token_counter(driver: LLMProvider) -> Callable[[str], int]:
    """Exact counts from the weights file's vocabulary alone (llama.cpp ``vocab_only``: a
    fraction of a second and little memory), else the driver's provider (loads the model)."""
    path = getattr(driver, "model_path", None)
    if not isinstance(path, Path):
        return driver.count_tokens
    vocabulary: list[Any] = []
    lock = threading.Lock()

    def count(text: str) -> int:
        with lock:
            if not vocabulary:
                try:
                    from llama_cpp import Llama
                except ImportError:
                    return driver.count_tokens(text)
                vocabulary.append(Llama(model_path=str(path), vocab_only=True, verbose=False))
        return len(vocabulary[0].tokenize(text.encode("utf-8"), add_bos=False, special=True))

    return count


class ModelReplicas(LoopHook):
    """The session's pools: started before the first proposal, ended with the session."""

    name = "model_replicas"
    blocks_proposals = False

    def __init__(self, pools: Mapping[str, RayModelPool], own_cluster: RayCluster | None) -> None:
        self.pools = dict(pools)  # model label -> pool
        self.own_cluster = own_cluster  # a cluster no executor closes

    @classmethod
    def build(cls, models: list[ModelConfig], providers: Mapping[str, LLMProvider],
              executor: Any, settings: ExecutionConfig) -> ModelReplicas:
        """One pool per model, on the executor's cluster when it has one (one connection
        serves both), else on a cluster of its own."""
        cluster = getattr(executor, "cluster", None)
        own = None if isinstance(cluster, RayCluster) else RayCluster(settings)
        shared = own or cluster
        assert isinstance(shared, RayCluster)
        return cls({m.label: RayModelPool(m, providers[m.label], shared) for m in models}, own)

    async def prepare(self) -> None:
        for pool in self.pools.values():
            pool.start()

    async def close(self) -> None:
        for pool in self.pools.values():
            pool.close()
        if self.own_cluster is not None:
            self.own_cluster.close()
