"""LangChain adapters: pool-split selection as a drop-in retriever,
document compressor and LCEL runnable.

Data flows one way: ``Document`` -> entry (metadata + ``content`` + ``id``)
-> core selector -> selection -> new ``Document`` objects, always-scope
corrections first, then each pool's documents in pool order. The caller's
documents are never mutated: returned documents are copies whose metadata
gains one key, ``"poolsplit"`` (``{"pool", "score", "always"}``).

Entry points:

* :class:`PoolSplitRetriever` standalone over documents
  (``PoolSplitRetriever(documents=..., pools=...)``), over a vector store with
  per-pool recall (:meth:`PoolSplitRetriever.from_vectorstore`), or over any
  retriever (``base_retriever=...``).
* :class:`PoolSplitCompressor` for ``ContextualCompressionRetriever`` and
  compressor pipelines, and :meth:`PoolSplitCompressor.as_runnable` for
  ``retriever | selector`` in LCEL.
* :func:`format_documents`: provenance-tagged text for a prompt.
"""

from .._frameworks import SELECTION_KEY
from .compressor import PoolSplitCompressor
from .documents import SELECTION_EVENT, document_to_entry, format_documents
from .middleware import PoolSplitMemoryMiddleware
from .retriever import PoolSplitRetriever, type_filter
from .store import BaseStoreMemory

__all__ = [
    "BaseStoreMemory",
    "PoolSplitCompressor",
    "PoolSplitMemoryMiddleware",
    "PoolSplitRetriever",
    "SELECTION_EVENT",
    "SELECTION_KEY",
    "document_to_entry",
    "format_documents",
    "type_filter",
]
