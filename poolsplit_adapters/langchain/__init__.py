"""LangChain adapters: pool-split selection as a drop-in retriever,
document compressor and LCEL runnable.

Data flows one way: ``Document`` -> entry (metadata + ``content`` + ``id``)
-> recall plan (vector-store mode) -> core selector -> selection -> new
``Document`` objects, always-scope corrections first, then each pool's
documents in pool order. The caller's documents are never mutated: returned
documents are copies whose metadata gains one key, ``"poolsplit"``
(``{"pool", "score", "always"}`` plus the call's sealed omission counts).

Entry points:

* :class:`PoolSplitRetriever` standalone over documents
  (``PoolSplitRetriever(documents=..., pools=...)``), over a vector store with
  per-pool recall (:meth:`PoolSplitRetriever.from_vectorstore`), or over any
  retriever (``base_retriever=...``).
* :class:`PoolSplitCompressor` for ``ContextualCompressionRetriever`` and
  compressor pipelines, and :meth:`PoolSplitCompressor.as_runnable` for
  ``retriever | selector`` in LCEL.
* :func:`format_documents`: provenance-tagged text for a prompt.
* :func:`~poolsplit_adapters.reports.capture_selections` (re-exported): a
  caller's own selection reports.
* :class:`HashEmbeddings`: a deterministic ``Embeddings`` with real
  similarity, for tests and demos (imported on first use).
* :class:`PoolSplitMemoryMiddleware` for ``langchain.agents.create_agent`` and
  :class:`BaseStoreMemory` over a LangGraph store (long-term memory for
  agents); :class:`VectorStoreMemory`, a vector store under the same store
  contract; :func:`~.store.namespace_label`, the one mapping of a LangGraph
  namespace tuple to an entry's ``namespace`` string. Imported on first use: they pull in ``langchain.agents``, which
  retriever-only users need not pay for.
"""

from typing import Any

from ..convert import SELECTION_KEY
from ..reports import capture_selections
from .compressor import PoolSplitCompressor
from .documents import SELECTION_EVENT, document_to_entry, format_documents
from .filters import FilterBuilder, callable_filter, dict_filter, type_filter
from .retriever import PoolSplitRetriever


def __getattr__(name: str) -> Any:
    if name == "PoolSplitMemoryMiddleware":
        from .middleware import PoolSplitMemoryMiddleware

        return PoolSplitMemoryMiddleware
    if name == "BaseStoreMemory":
        from .store import BaseStoreMemory

        return BaseStoreMemory
    if name == "namespace_label":
        from .namespaces import namespace_label

        return namespace_label
    if name == "VectorStoreMemory":
        from .vector_memory import VectorStoreMemory

        return VectorStoreMemory
    if name == "HashEmbeddings":
        from .embeddings import HashEmbeddings

        return HashEmbeddings
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = [
    "BaseStoreMemory",
    "FilterBuilder",
    "HashEmbeddings",
    "PoolSplitCompressor",
    "PoolSplitMemoryMiddleware",
    "PoolSplitRetriever",
    "SELECTION_EVENT",
    "SELECTION_KEY",
    "VectorStoreMemory",
    "callable_filter",
    "capture_selections",
    "dict_filter",
    "document_to_entry",
    "format_documents",
    "namespace_label",
    "type_filter",
]
