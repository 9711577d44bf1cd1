"""The middleware's backend for what a LangChain caller hands it: a
LangChain ``VectorStore`` wrapped in [`VectorStoreMemory`][] (recalled per
pool by the retriever), anything else as the store engine takes it
(``stores.langgraph.backends``: a LangGraph ``BaseStore``, a list of entries,
any [`MemoryStore`][])."""

from __future__ import annotations

from typing import Any, Dict

from langchain_core.vectorstores import VectorStore
from langgraph.store.base import BaseStore

from ..settings import AgentMemorySettings
from ..stores.langgraph.backends import Backend
from ..stores.langgraph.backends import backend_for as store_backend_for
from .vector_memory import VectorStoreMemory

__all__ = ["backend_for"]


def _vector_memory(store: VectorStore, settings: AgentMemorySettings) -> VectorStoreMemory:
    """A LangChain vector store as the middleware's memory: recalled per
    pool by the retriever. Its version counts the writes made through it: a
    selection is reused within a step unless the middleware itself wrote; a
    document added by another path during a step shows from the next step on."""
    options: Dict[str, Any] = {"token_counter": settings.text_counter}  # the marker comes per call
    if settings.fetch_k is not None:
        options["fetch_k"] = settings.fetch_k
    return VectorStoreMemory(store, **options)


def backend_for(store: Any, settings: AgentMemorySettings, *, argument: str = "store") -> Backend:
    """The `Backend` for ``store`` (a LangGraph ``BaseStore``, a LangChain
    ``VectorStore``, a list of entries or a ``MemoryStore``); a clear error
    naming ``argument`` for anything else."""
    if isinstance(store, VectorStore) and not isinstance(store, BaseStore):
        store = _vector_memory(store, settings)
    return store_backend_for(store, settings, argument=argument)
