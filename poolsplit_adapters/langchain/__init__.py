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
"""

from ..convert import SELECTION_KEY
from ..reports import capture_selections
from .compressor import PoolSplitCompressor
from .documents import SELECTION_EVENT, document_to_entry, format_documents
from .filters import FilterBuilder, callable_filter, dict_filter, type_filter
from .retriever import PoolSplitRetriever

__all__ = [
    "FilterBuilder",
    "PoolSplitCompressor",
    "PoolSplitRetriever",
    "SELECTION_EVENT",
    "SELECTION_KEY",
    "callable_filter",
    "capture_selections",
    "dict_filter",
    "document_to_entry",
    "format_documents",
    "type_filter",
]
