"""LlamaIndex adapters: retriever, node postprocessor and memory blocks.

Data flows one way: node -> entry (metadata + text + node id) -> core
selector -> selection -> new ``NodeWithScore`` objects, always-scope
corrections first. The caller's nodes are never mutated: returned nodes are
copies whose metadata gains one key, ``"poolsplit"`` (pool, score, always),
excluded from the embedding view and, unless ``show_selection_to_llm``, from
the LLM view.

Entry points:

* :class:`PoolSplitRetriever` over nodes, or per-pool recall over a
  ``VectorStoreIndex`` (:meth:`PoolSplitRetriever.from_vector_store_index`).
* :class:`PoolSplitNodePostprocessor`: pool budgets for any pipeline; put it
  last.
* :func:`poolsplit_memory_blocks`: two blocks for
  ``llama_index.core.memory.Memory`` that keep corrections in the context on
  every turn and pool the rest.

Every call records its selection report as ``last_selection`` and emits a
:class:`PoolSplitSelectionEvent` through LlamaIndex instrumentation.
"""

from .._frameworks import SELECTION_KEY
from .events import PoolSplitSelectionEvent
from .memory import CorrectionsMemoryBlock, PooledMemoryBlock, PoolSplitMemoryStore, poolsplit_memory_blocks
from .nodes import node_to_entry, nodes_from
from .postprocessor import PoolSplitNodePostprocessor
from .retriever import PoolSplitRetriever

__all__ = [
    "CorrectionsMemoryBlock",
    "PoolSplitMemoryStore",
    "PoolSplitNodePostprocessor",
    "PoolSplitRetriever",
    "PoolSplitSelectionEvent",
    "PooledMemoryBlock",
    "SELECTION_KEY",
    "node_to_entry",
    "nodes_from",
    "poolsplit_memory_blocks",
]
