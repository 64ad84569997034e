"""Raw reads of a run store for tests that inspect what a run wrote (product code goes through
the store's typed API; a test may look at the rows themselves)."""

from __future__ import annotations

from typing import Any

from cambrian.core.events import kind_of
from cambrian.store.store import Store


def sql(store: Store, query: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> Any:
    """A cursor over ``query`` on the store's own connection (sees its open transaction)."""
    return store.database.execute(query, params)


def stored_events(store: Store, kind: str | None = None) -> list[dict[str, Any]]:
    """Stored events as plain dicts: {"kind", "payload", "created_at"}."""
    stored = store.events.list(kind) if kind else store.events.list()
    return [{"kind": kind_of(e.event), "payload": e.event.payload(), "created_at": e.created_at}
            for e in stored]


def add_candidate(store: Store, **fields: Any) -> int:
    """Store a candidate row directly (tests that build a run by hand)."""
    from cambrian.store.rows import NewCandidate

    return store.candidates.add(NewCandidate(**fields))


def add_context(store: Store, *, purpose: str, model: str, provider: str, request: Any,
                response: Any, error: str = "", parent_context_id: int | None = None) -> int:
    """Store an LLM call as the gateway records it."""
    from cambrian.llm.gateway import Capabilities, LLMGateway

    caps = Capabilities(model, provider, provider == "local", provider == "local", 0, len)
    return store.contexts.add(LLMGateway._context(purpose, caps, request, response, error,
                                                  parent_context_id))
