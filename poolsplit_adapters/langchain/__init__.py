"""LangChain adapters: pool-split selection as a drop-in retriever,
document compressor and LCEL runnable.

Data flows one way: ``Document`` -> entry (metadata + ``content`` + ``id``)
-> recall plan (vector-store mode) -> core selector -> selection -> new
``Document`` objects, always-scope corrections first, then each pool's
documents in pool order. The caller's documents are never mutated: returned
documents are copies whose metadata gains one key, ``"poolsplit"``
(``{"pool", "score", "always"}`` plus the call's sealed omission counts).

Entry points:

* [`PoolSplitRetriever`][] standalone over documents
  (``PoolSplitRetriever(documents=..., pools=...)``), over a vector store with
  per-pool recall ([`PoolSplitRetriever.from_vectorstore`][]), or over any
  retriever (``base_retriever=...``).
* [`PoolSplitCompressor`][] for ``ContextualCompressionRetriever`` and
  compressor pipelines, and [`PoolSplitCompressor.as_runnable`][] for
  ``retriever | selector`` in LCEL.
* [`format_documents`][]: provenance-tagged text for a prompt.
* [`capture_selections`][] (re-exported): a
  caller's own selection reports.
* [`HashEmbeddings`][poolsplit_adapters.langchain.embeddings.HashEmbeddings]: a deterministic ``Embeddings`` with real
  similarity, for tests and demos (imported on first use).
* [`PoolSplitMemoryMiddleware`][poolsplit_adapters.langchain.middleware.PoolSplitMemoryMiddleware] for ``langchain.agents.create_agent``
  (its settings grouped in [`RecallConfig`][poolsplit_adapters.agent_config.RecallConfig],
  [`WriteConfig`][poolsplit_adapters.agent_config.WriteConfig] and
  [`RenderConfig`][poolsplit_adapters.agent_config.RenderConfig]) and
  [`BaseStoreMemory`][poolsplit_adapters.stores.langgraph.store.BaseStoreMemory] over a LangGraph store (long-term memory for
  agents); [`VectorStoreMemory`][poolsplit_adapters.langchain.vector_memory.VectorStoreMemory], a vector store under the same store
  contract; [`namespace_label`][poolsplit_adapters.stores.langgraph.store.namespace_label], the one mapping of a LangGraph
  namespace tuple to an entry's ``namespace`` string. Imported on first use: they pull in ``langchain.agents``, which
  retriever-only users need not pay for.
* `create_search_memory_tool`: a `search_memory(query)` tool for
  `create_agent(tools=[...])`, pool-split, scoped to the caller's namespace
  (imported on first use, as the middleware).
"""

import importlib
from typing import Any

from ..convert import SELECTION_KEY
from ..reports import capture_selections
from ..stores.vectorstores.langchain_filters import FilterBuilder, callable_filter, dict_filter, type_filter
from .compressor import PoolSplitCompressor
from .documents import SELECTION_EVENT, document_to_entry, format_documents
from .retriever import PoolSplitRetriever

#: Names loaded on first use (their modules import ``langchain.agents`` or
#: numpy, which a retriever-only program never needs): name -> its module.
_LAZY = {
    "PoolSplitMemoryMiddleware": ".middleware",
    "BaseStoreMemory": "..stores.langgraph.store",
    "namespace_label": "..stores.langgraph.namespaces",
    "VectorStoreMemory": ".vector_memory",
    "create_search_memory_tool": ".search_tool",
    "HashEmbeddings": ".embeddings",
    "RecallConfig": "..agent_config",
    "RenderConfig": "..agent_config",
    "WriteConfig": "..agent_config",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = [
    "BaseStoreMemory",
    "FilterBuilder",
    "HashEmbeddings",
    "PoolSplitCompressor",
    "PoolSplitMemoryMiddleware",
    "PoolSplitRetriever",
    "RecallConfig",
    "RenderConfig",
    "SELECTION_EVENT",
    "SELECTION_KEY",
    "VectorStoreMemory",
    "WriteConfig",
    "callable_filter",
    "capture_selections",
    "create_search_memory_tool",
    "dict_filter",
    "document_to_entry",
    "format_documents",
    "namespace_label",
    "type_filter",
]
